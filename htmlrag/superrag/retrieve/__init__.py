"""Retrievers over the layout-aware graph; every one returns :class:`~.evidence.Evidence` lists."""
