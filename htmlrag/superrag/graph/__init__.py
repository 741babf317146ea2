"""The layout-aware graph: schema, construction from parsed PDFs, and the graph-store backends."""
