"""The Hydra configs, shipped as package data (``pkg://htmlrag_bench.conf``)."""
