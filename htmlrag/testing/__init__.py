"""Deterministic inputs for tests, benchmarks and examples: PDFs generated with known content
(:mod:`htmlrag.testing.pdfs`). Nothing here is used by a run."""
