"""The tokenizer files a model folder carries, and documents cut into windows for the build."""

from __future__ import annotations

from collections.abc import Sequence

from transformers import PreTrainedTokenizerFast

from docq.text.tokenizing import tokenize
from docq.text.windowing import Window, WindowSpec, split

# The tokenizer files a model folder carries (what workers load with AutoTokenizer).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def windows_of(
    tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], spec: WindowSpec
) -> list[list[Window]]:
    """Every document's windows, cut by the workers' own tokenizing and windowing code."""
    return [split(doc, ids, spec) for doc, ids in enumerate(tokenize(tokenizer, texts))]
