"""A Hugging Face sequence-classification checkpoint directory, read the way conversion needs it."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoModelForSequenceClassification, PreTrainedModel

from docq.text.tokens import TOKENIZER_FILES


def load_checkpoint(path: Path) -> tuple[PreTrainedModel, tuple[str, ...]]:
    """The FP32 PyTorch model of a checkpoint directory and its labels in logit order."""
    model = (
        AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True)
        .float()
        .eval()
    )
    id2label = model.config.id2label
    labels = tuple(str(id2label[i]) for i in range(model.config.num_labels))
    missing = [n for n in TOKENIZER_FILES if not (path / n).exists()]
    if missing:
        raise FileNotFoundError(f"{path} has no {', '.join(missing)}: workers need the tokenizer")
    return model, labels
