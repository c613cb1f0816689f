"""The model's fast tokenizer and the windowing spec that goes with it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerFast

from workers.windowing import Window, WindowSpec, split

# The tokenizer files a model folder carries (what workers load with AutoTokenizer).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def load_tokenizer(path: Path) -> PreTrainedTokenizerFast:
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if not isinstance(tokenizer, PreTrainedTokenizerFast):
        raise TypeError(f"{path} holds no fast tokenizer")
    return tokenizer


def window_spec(tokenizer: PreTrainedTokenizerFast, max_seq_len: int, stride: int) -> WindowSpec:
    return WindowSpec(
        max_seq_len=max_seq_len,
        stride=stride,
        cls_id=int(tokenizer.cls_token_id),
        sep_id=int(tokenizer.sep_token_id),
    )


def content_tokens(tokenizer: PreTrainedTokenizerFast, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of whole documents: no special tokens, no truncation (windowing cuts them)."""
    if not texts:
        return []
    return list(tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"])


def windows_of(
    tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], spec: WindowSpec
) -> list[list[Window]]:
    """Every document's windows, cut by the workers' own windowing code."""
    return [split(doc, ids, spec) for doc, ids in enumerate(content_tokens(tokenizer, texts))]
