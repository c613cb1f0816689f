"""Load a model's fast tokenizer from its repository folder and tokenize document bodies."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerFast

from docq.errors import ModelError
from docq.text.windowing import WindowSpec


@lru_cache(maxsize=16)
def load_tokenizer(folder: Path) -> PreTrainedTokenizerFast:
    """The fast tokenizer kept beside the model (never downloaded: local files only)."""
    try:
        tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True, use_fast=True)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load tokenizer from {folder}: {exc}") from exc
    if not isinstance(tok, PreTrainedTokenizerFast):
        raise ModelError(f"tokenizer in {folder} is not a fast tokenizer")
    if tok.cls_token_id is None or tok.sep_token_id is None:
        raise ModelError(f"tokenizer in {folder} has no [CLS]/[SEP] tokens")
    # Documents are windowed, never truncated: silence the "longer than max length" warning.
    tok.model_max_length = 1 << 62
    return tok


def window_spec(tok: PreTrainedTokenizerFast, max_seq_len: int, stride: int) -> WindowSpec:
    """How to cut windows for a model: its limits plus this tokenizer's [CLS]/[SEP] ids."""
    assert tok.cls_token_id is not None and tok.sep_token_id is not None
    return WindowSpec(
        max_seq_len=max_seq_len, stride=stride, cls_id=tok.cls_token_id, sep_id=tok.sep_token_id
    )


# A fast tokenizer sets its truncation and padding state on every call, and two threads
# doing so at once fail ("Already borrowed"): shard threads take turns. One call already
# spreads a batch of texts over every core.
_TOKENIZE = threading.Lock()


def tokenize(tok: PreTrainedTokenizerFast, texts: Sequence[str]) -> list[list[int]]:
    """Content token ids of each text: no special tokens, no truncation (windowing follows)."""
    if not texts:
        return []
    with _TOKENIZE:
        enc = tok(
            list(texts),
            add_special_tokens=False,
            truncation=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
    return [list(ids) for ids in enc["input_ids"]]
