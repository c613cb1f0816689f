"""The Triton server's room: the launcher of the real tritonserver and the model code it runs."""
