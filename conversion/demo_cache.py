"""The frozen layers' outputs for doc-type's training windows, kept between training runs.

A doc-type training run starts with the encoder's forward pass over every training
window through the frozen embeddings and layers 0-4 (`phases_s`: encode_training_windows;
its epochs then train the last layer on these outputs). They depend only on the
encoder's weights, the windows' token ids, the thread count and the torch and
transformers versions, so they are kept in build/layer-inputs/<key>.pt and read back by
the next run on the same inputs: a rerun of the gates, a change of epochs or learning
rate that keeps the corpus. The values read back are the ones computed (FP16 tensors,
saved exactly), so a run from the cache trains the same head as one without it. A clean
clone (CI) has no cache and encodes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import torch
import transformers
from transformers import BertForSequenceClassification

from conversion import attestation, last_layer
from docq.text.windowing import Window

# Where conversion.demo_train keeps them; None keeps nothing (tests/conversion/
# test_demo_training.py: a retrain from scratch, and no gigabyte written in CI).
CACHE: Path | None = Path(__file__).resolve().parent.parent / "build" / "layer-inputs"


def key(source: Path, windows: Sequence[Window]) -> str:
    """What the frozen layers' outputs depend on, hashed: encoder, versions, threads, ids."""
    digest = hashlib.sha256()
    versions = f"{torch.__version__} {transformers.__version__} {torch.get_num_threads()}"
    digest.update(f"{attestation.encoder_sha256(source)} {versions}".encode())
    for window in windows:
        digest.update(window.length.to_bytes(4, "little"))
        digest.update(window.ids.astype("<i8").tobytes())
    return digest.hexdigest()[:32]


def layer_inputs(
    model: BertForSequenceClassification,
    windows: Sequence[Window],
    source: Path,
    cache: Path | None,
) -> tuple[list[torch.Tensor], bool]:
    """last_layer.layer_inputs of `windows`, from `cache` where a run kept them (None: no
    cache); and whether they came from it."""
    if cache is None:
        return last_layer.layer_inputs(model, windows), False
    path = cache / f"{key(source, windows)}.pt"
    if path.exists():
        inputs: list[torch.Tensor] = torch.load(path)
        if len(inputs) == len(windows):
            return inputs, True
    inputs = last_layer.layer_inputs(model, windows)
    cache.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    torch.save(inputs, partial)
    partial.replace(path)  # whole or absent: a run stopped mid-write leaves no cache file
    return inputs, False
