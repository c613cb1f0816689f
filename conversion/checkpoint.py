"""A Hugging Face sequence-classification checkpoint directory, read the way conversion needs it.

Any checkpoint that transformers' AutoModelForSequenceClassification and the fast
AutoTokenizer load converts: BERT, RoBERTa, XLM-R and their kin, with the tokenizer files
`save_pretrained` wrote. What docq cannot serve is refused with one line (CheckpointRefused)
before anything is exported.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from transformers import (
    AutoModelForSequenceClassification,
    PreTrainedModel,
    PreTrainedTokenizerFast,
)

from docq.errors import DocqError, ModelError
from docq.text.tokenizing import load_tokenizer
from docq.text.tokens import tokenizer_files

# transformers names the labels of a config without id2label LABEL_0, LABEL_1, ...
_DEFAULT_LABEL = re.compile(r"LABEL_\d+")
_SAMPLE = "A short sample text, 123."


class CheckpointRefused(DocqError):
    """A checkpoint docq cannot convert; its message says why, in one line."""

    code = "checkpoint_refused"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _config(path: Path) -> dict[str, object]:
    if not (path / "config.json").is_file():
        raise CheckpointRefused(f"{path} is not a Hugging Face checkpoint: it has no config.json")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointRefused(f"{path}/config.json is unreadable: {_first_line(exc)}") from exc
    if not isinstance(config, dict):
        raise CheckpointRefused(f"{path}/config.json is not a JSON object")
    architectures = config.get("architectures") or []
    if not any(str(a).endswith("ForSequenceClassification") for a in architectures):
        raise CheckpointRefused(
            f"{path} is not a sequence classifier (architectures {architectures}): "
            "docq converts *ForSequenceClassification checkpoints"
        )
    if config.get("problem_type") in ("regression", "multi_label_classification"):
        raise CheckpointRefused(
            f"{path} is a {config['problem_type']} model: docq serves one label per document"
        )
    return config


def check_tokenizer(path: Path, tok: PreTrainedTokenizerFast, vocab_size: int | None) -> None:
    """Refuse a tokenizer the workers' windowing would misuse: windows are cut as
    cls + content + sep, so the tokenizer must frame a text exactly that way, and its ids
    must be rows of the model's embedding."""
    content = tok(_SAMPLE, add_special_tokens=False)["input_ids"]
    framed = tok(_SAMPLE)["input_ids"]
    if framed != [tok.cls_token_id, *content, tok.sep_token_id]:
        raise CheckpointRefused(
            f"the tokenizer of {path} does not frame a text as {tok.cls_token} ... "
            f"{tok.sep_token} (it gives {tok.convert_ids_to_tokens(framed)[:3]}...): "
            "docq's windows would differ from what the model was trained on"
        )
    if vocab_size is not None and len(tok) > vocab_size:
        raise CheckpointRefused(
            f"the tokenizer of {path} has {len(tok)} tokens, the model's vocabulary "
            f"{vocab_size}: they do not belong together"
        )


def load_tokenizer_of(path: Path, vocab_size: int | None) -> PreTrainedTokenizerFast:
    """The checkpoint's fast tokenizer, checked against the model (CheckpointRefused if not)."""
    if not set(tokenizer_files(path)) - {"tokenizer_config.json", "special_tokens_map.json"}:
        raise CheckpointRefused(
            f"{path} has no tokenizer (tokenizer.json and tokenizer_config.json, as the "
            "tokenizer's save_pretrained writes them): workers need it"
        )
    try:
        tok = load_tokenizer(path)
    except ModelError as exc:
        raise CheckpointRefused(_first_line(exc)) from exc
    check_tokenizer(path, tok, vocab_size)
    return tok


def load_checkpoint(path: Path) -> tuple[PreTrainedModel, tuple[str, ...]]:
    """The FP32 PyTorch model of a checkpoint directory and its labels in logit order.

    Raises CheckpointRefused (one line) for a folder that is not a sequence classifier with
    a label map and a fast tokenizer that fits it.
    """
    if not path.is_dir():
        raise CheckpointRefused(f"{path} is not a checkpoint directory")
    config = _config(path)
    id2label = config.get("id2label")
    if not isinstance(id2label, dict) or all(
        _DEFAULT_LABEL.fullmatch(str(v)) for v in id2label.values()
    ):
        raise CheckpointRefused(
            f"{path} has no label map (config.json's id2label names no label): docq "
            "answers with label names, set id2label before converting"
        )
    vocab_size = config.get("vocab_size")
    load_tokenizer_of(path, vocab_size if isinstance(vocab_size, int) else None)  # no weights yet
    try:
        model = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise CheckpointRefused(f"cannot load {path}: {_first_line(exc)}") from exc
    model = model.float().eval()
    labels = tuple(str(model.config.id2label[i]) for i in range(model.config.num_labels))
    return model, labels


def max_positions(model: PreTrainedModel) -> int | None:
    """The longest window the model's position embeddings hold (None where it has no such
    limit): RoBERTa and XLM-R count positions from their pad id + 1, so 514 rows hold 512."""
    rows = getattr(model.config, "max_position_embeddings", None)
    if rows is None:
        return None
    padding_idx = getattr(getattr(model.base_model, "embeddings", None), "padding_idx", None)
    return int(rows) - (int(padding_idx) + 1 if padding_idx is not None else 0)


def check_window(path: Path, model: PreTrainedModel, max_seq_len: int) -> None:
    """Refuse windows longer than the model's positions (an IndexError inside the export)."""
    limit = max_positions(model)
    if limit is not None and max_seq_len > limit:
        raise CheckpointRefused(
            f"{path} holds windows of at most {limit} tokens: convert with --max-seq-len {limit}"
        )
