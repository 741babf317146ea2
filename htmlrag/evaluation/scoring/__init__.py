"""What turns a context and an answer into a scored row: the metric registry and the evaluation loop."""
