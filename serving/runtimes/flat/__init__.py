"""The torch-gpu runtime's unpadded encoder: BERT-family sequence classifiers run on one flat
tensor of real tokens.

Every execute() hands it the batch's windows as one `[tokens]` array with sequence offsets
(`cu`, `[n + 1]`, int32), never a padded `[rows, longest]` block: the matrix products, norms
and activations run on real tokens only, attention runs per sequence through
`torch.nn.attention.varlen.varlen_attn` (flash attention over the offsets), and the
classifier reads each sequence's first token. A batch whose last windows are short costs
what its tokens cost, where the padded runtime paid for its longest row in every row and
fell back from flash to the masked kernel.

Weights come from the Hugging Face checkpoint (BERT, RoBERTa and XLM-RoBERTa layouts: post-
LayerNorm encoder, absolute positions, GELU, a two-layer tanh head on the first token).

One module per concept, each choice made at load documented where it is made:

- `checkpoint`: which checkpoints run flat, their position ids, a layer's weights;
- `products`: a layer's matrix products, FP16/BF16 (cuBLAS or docq's GEMM) or FP8;
- `attention`: the attention kernels (flash, cuDNN, docq's Triton kernel) and the checks
  that choose among them at load;
- `gemm_plan`: docq's GEMM timed against cuBLAS at load, per product;
- `timing`: how those load-time choices time a call;
- `encoder`: `FlatEncoder`, the forward pass over these parts.

Where CUDA or OpenAI Triton is missing the same maths runs in PyTorch ops (attention as
SDPA per sequence, FP8 emulated by rounding to float8 and computing in float32), so the
offsets, the weight layout and the quantization are tested on a CPU.
"""

from . import attention, checkpoint, encoder, gemm_plan, products, timing

__all__ = ["attention", "checkpoint", "encoder", "gemm_plan", "products", "timing"]
