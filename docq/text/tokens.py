"""The tokenizer files a model folder carries, and documents cut into windows for the build."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from transformers import PreTrainedTokenizerFast

from docq.text.tokenizing import tokenize
from docq.text.windowing import Window, WindowSpec, split

# The demo models' tokenizer files (BERT's WordPiece, as the demos' source ships them).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)

# Every file `save_pretrained` writes for a tokenizer: its configuration, the fast
# tokenizer's tokenizer.json, and the slow tokenizer's vocabulary where there is one
# (WordPiece vocab.txt, byte-level BPE vocab.json + merges.txt, SentencePiece models).
_SAVED_FILES = frozenset(
    {
        *TOKENIZER_FILES,
        "added_tokens.json",
        "chat_template.jinja",
        "vocab.json",
        "merges.txt",
        "sentencepiece.bpe.model",
        "spiece.model",
        "spm.model",
        "tokenizer.model",
    }
)


def tokenizer_files(folder: Path) -> tuple[str, ...]:
    """The tokenizer files of a checkpoint folder, as its `save_pretrained` wrote them: what
    travels into a model's tokenizer/ for the workers' AutoTokenizer."""
    return tuple(sorted(p.name for p in folder.iterdir() if p.name in _SAVED_FILES))


def windows_of(
    tokenizer: PreTrainedTokenizerFast, texts: Sequence[str], spec: WindowSpec
) -> list[list[Window]]:
    """Every document's windows, cut by the workers' own tokenizing and windowing code."""
    return [split(doc, ids, spec) for doc, ids in enumerate(tokenize(tokenizer, texts))]
