"""docq workers: the CPU side of the pipeline (tokenize, window, pack, infer, aggregate)."""
