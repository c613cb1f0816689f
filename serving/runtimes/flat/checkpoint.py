"""What the flat encoder reads from a Hugging Face checkpoint: which architectures run flat,
each token's position id as the checkpoint numbers it, and a layer's weights."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .products import Linear

ARCHITECTURES = ("bert", "roberta", "xlm-roberta")


def unsupported(config: Any) -> str | None:
    """Why the checkpoint's `config` cannot run flat (None: it can)."""
    if config.model_type not in ARCHITECTURES:
        return f"model_type {config.model_type!r} is not one of {ARCHITECTURES}"
    if getattr(config, "position_embedding_type", "absolute") != "absolute":
        return "only absolute position embeddings run flat"
    if config.hidden_act != "gelu" or getattr(config, "is_decoder", False):
        return "only encoders with GELU run flat"
    return None


def positions(config: Any, ids: np.ndarray, cu: np.ndarray) -> np.ndarray:
    """Each token's position id, as the checkpoint's model numbers them in a padded row.

    BERT counts from 0 in each sequence; RoBERTa counts non-padding tokens from
    pad_token_id + 1 and gives padding ids pad_token_id (transformers'
    create_position_ids_from_input_ids)."""
    starts = np.repeat(cu[:-1], np.diff(cu)).astype(np.int64)
    index = np.arange(ids.size, dtype=np.int64) - starts  # each token's index in its window
    if config.model_type == "bert":
        return index
    pad = int(config.pad_token_id)
    real = ids != pad
    if real.all():  # no padding id among the tokens (the flat batch holds real ones): count
        return index + (pad + 1)
    real = real.astype(np.int64)
    counted = np.cumsum(real)
    before = np.concatenate([[0], counted])[starts]  # real tokens before the sequence
    return np.where(real == 1, counted - before + pad, pad)


@dataclass
class Norm:
    weight: torch.Tensor
    bias: torch.Tensor
    eps: float


@dataclass
class Layer:
    qkv: Linear
    out: Linear
    norm1: Norm
    up: Linear
    down: Linear
    norm2: Norm


def fused_qkv(attention: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Query, key and value projections as one [3 x hidden, hidden] weight and its bias."""
    parts = (attention.query, attention.key, attention.value)
    return torch.cat([p.weight for p in parts]), torch.cat([p.bias for p in parts])
