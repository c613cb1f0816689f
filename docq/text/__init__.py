"""The model contract both sides share: tokenizing, windowing, packing and aggregation."""
