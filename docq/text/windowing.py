"""Split token sequences into model-sized windows so that no text is dropped.

A window holds at most `max_seq_len` tokens including the model's two special tokens
([CLS] ... [SEP] for BERT-style models). Consecutive windows overlap by `stride` content
tokens, so a sentence cut by one window boundary is read whole by the next window.
A 3,000-token document with max_seq_len=512 and stride=64 becomes 7 windows, not one
truncated one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Window:
    """One model input: the token ids of a slice of one document, special tokens included."""

    doc: int  # index of the document this window belongs to (within its batch of documents)
    ids: npt.NDArray[np.int64]

    @property
    def length(self) -> int:
        return int(self.ids.shape[0])


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """How a model wants its windows cut: read from the model's config.pbtxt parameters."""

    max_seq_len: int
    stride: int
    cls_id: int
    sep_id: int

    def __post_init__(self) -> None:
        if self.max_seq_len < 3:
            raise ValueError("max_seq_len must leave room for two special tokens and content")
        if not 0 <= self.stride < self.content_len:
            raise ValueError(
                f"stride must be in [0, {self.content_len}) for max_seq_len={self.max_seq_len}"
            )

    @property
    def content_len(self) -> int:
        """Content tokens per window (the special tokens take two places)."""
        return self.max_seq_len - 2

    @property
    def step(self) -> int:
        """Distance between the starts of consecutive windows."""
        return self.content_len - self.stride


def window_count(n_tokens: int, spec: WindowSpec) -> int:
    """How many windows a document of `n_tokens` content tokens becomes."""
    if n_tokens <= spec.content_len:
        return 1
    return 1 + math.ceil((n_tokens - spec.content_len) / spec.step)


def split(doc: int, tokens: Sequence[int], spec: WindowSpec) -> list[Window]:
    """Cut one document's content tokens (no special tokens) into overlapping windows.

    Every token lands in at least one window; an empty document still gets one window
    ([CLS][SEP]) so that it receives a prediction like any other.
    """
    body = np.asarray(tokens, dtype=np.int64)
    windows = []
    for i in range(window_count(len(body), spec)):
        start = i * spec.step
        chunk = body[start : start + spec.content_len]
        ids = np.empty(len(chunk) + 2, dtype=np.int64)
        ids[0] = spec.cls_id
        ids[1:-1] = chunk
        ids[-1] = spec.sep_id
        windows.append(Window(doc=doc, ids=ids))
    return windows


def split_all(token_lists: Sequence[Sequence[int]], spec: WindowSpec) -> list[Window]:
    """Windows of many documents; `Window.doc` is the document's position in `token_lists`."""
    return [w for doc, tokens in enumerate(token_lists) for w in split(doc, tokens, spec)]
