"""Triton model code for each runtime, copied into a model's version folder as model.py."""
