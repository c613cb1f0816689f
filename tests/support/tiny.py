"""A small random BERT classifier checkpoint, for tests that need a real model fast.

Plain torch and transformers only: the GPU tests import it on a machine that has neither
docq's dependencies nor its conftest.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def tiny_bert(
    path: Path, labels: Sequence[str], *, hidden: int = 32, layers: int = 2, init: float = 0.02
) -> Path:
    """Save a `layers`-layer, `hidden`-wide BERT sequence classifier (seeded random weights
    of standard deviation `init`: at BERT's 0.02 a tiny model's attention is near uniform)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=512,
        initializer_range=init,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    BertForSequenceClassification(config).eval().save_pretrained(path)
    return path


def tiny_roberta(
    path: Path, labels: Sequence[str], *, hidden: int = 64, layers: int = 2, init: float = 0.02
) -> Path:
    """Save a small random RoBERTa sequence classifier (positions counted from pad + 1)."""
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification

    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=1000,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=2 * hidden,
        max_position_embeddings=130,
        type_vocab_size=1,
        initializer_range=init,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    RobertaForSequenceClassification(config).eval().save_pretrained(path)
    return path


def reference_logits(version: Path, ids: object, mask: object) -> object:
    """PyTorch FP32 on the CPU, straight from the checkpoint in `version`, on a padded batch
    (numpy arrays in, numpy logits out)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(version)).eval()
    with torch.inference_mode():
        out = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    return out.logits.numpy()
