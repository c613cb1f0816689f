"""The serve bench's requests: their shapes (rows of windows), random windows of token ids
of a shape, and the set of requests whose logits the parity check compares."""

from __future__ import annotations

import numpy as np

from bench.gpu.model import VOCAB

Shape = tuple[int, int, float]  # rows, tokens, the last row's share of real tokens

# (7, 512, 0.6) is real traffic, a document's windows with its short last one (key "7x512p");
# every other row is full.
SHAPES: list[Shape] = [(1, 256, 1.0), (1, 512, 1.0), (2, 512, 1.0), (7, 512, 1.0), (7, 512, 0.6)]
VARIANT_SHAPES = SHAPES[1:]


def key(shape: Shape) -> str:
    rows, length, last = shape
    return f"{rows}x{length}" + ("p" if last < 1 else "")


def real_tokens(shape: Shape) -> int:
    rows, length, last = shape
    return (rows - 1) * length + int(length * last)


def windows(rows: int, length: int, seed: int, last: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Full windows (every token real), as long documents give them; with `last` < 1 the
    last row holds that share of real tokens, then padding (id 1, mask 0)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, VOCAB, (rows, length), dtype=np.int64)
    ids[:, 0] = 0  # <s>
    mask = np.ones((rows, length), dtype=np.int64)
    if last < 1:
        mask[-1, int(length * last) :] = 0
        ids[-1, int(length * last) :] = 1  # RoBERTa's <pad>
    return ids, mask


def parity_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """Requests whose served logits are compared with the FP32 reference: full and partial
    rows of several lengths (128 windows)."""
    shapes = [(7, 512, 0.6), (8, 384, 0.3), (16, 128, 0.5), (1, 512, 1.0)]
    return [windows(*shapes[i % len(shapes)][:2], 500 + i, shapes[i % len(shapes)][2])
            for i in range(16)]  # fmt: skip
