"""Vector and full-text indexes over the graph's content (node ids are the keys)."""
