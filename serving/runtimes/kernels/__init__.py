"""OpenAI Triton kernels of the torch-gpu runtime's unpadded encoder (serving/runtimes/flat/),
one module per thing they compute:

- `rowwise`: one program per token row (LayerNorm with the residual add, GELU, FP8
  quantization);
- `attention`: `varlen_attention`, attention over ragged windows for the small batches'
  CUDA graphs;
- `gemm`: `linear`, a persistent TMA GEMM for the large batches' matrix products.

Imported only where CUDA and `triton` exist (the flat engine falls back to PyTorch ops
elsewhere, with the same maths: each of its modules imports the kernels it calls inside a
`try`). This package imports none of them itself, so that importing one costs only its own
compilation.

Per-row (per-token) scales follow each token's own range, so no calibration can go stale
and no token's outlier costs another token its precision; the weights carry per-channel
scales (flat.products.Linear). `torch._scaled_mm` takes exactly these two scale vectors.
"""
