"""The project's own sample pages and PDFs, shipped as package data (``htmlrag_bench.samples``)."""
