"""Convert a Hugging Face sequence-classification checkpoint into a served Triton model.

    checkpoint dir ──stage──> build/convert/<name>/   model.onnx | model.plan | weights,
    (config, weights,                                 model.py, config.pbtxt; ONNX checked
     tokenizer)                                       and compared with PyTorch
                   ──gate───> parity report (docq validate's numbers) - refused beyond
                                                      thresholds unless forced
                   ──publish> <repository>/<name>/<next version>/, renamed into place

One runtime per conversion (README, Models): `onnx-cpu` (Triton's Python backend running
ONNX Runtime: FP32, or INT8 by dynamic quantization; `fuse` rewrites the graph with ONNX
Runtime's transformer optimizer), `openvino-cpu` (Python backend running OpenVINO on the
ONNX export converted to OpenVINO IR), `onnxruntime` (Triton's ONNX Runtime backend, NGC
container), `torch-gpu` (Python backend running PyTorch FP16 on a GPU) and `tensorrt` (a
trtexec engine, FP16 or FP32, NGC container). The config.pbtxt is written by
conversion/pbtxt.py; for TensorRT its max_batch_size is the engine profile's max batch.

Here: staging and publishing. What to build, the Target, is conversion/target.py's; the ONNX
runtimes' builds (fused graph, OpenVINO IR, INT8) are conversion/backends.py's; the gate is
conversion/parity.py.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tritonclient.grpc import model_config_pb2 as mc

from conversion import export, package, pbtxt, tensorrt
from conversion.backends import (
    export_fused,
    fuse_transformer,
    quantize_int8,
    sample_batches,
    to_openvino,
)
from conversion.checkpoint import check_window, load_checkpoint
from conversion.target import PRECISIONS, Serving, Target
from docq.text.tokenizing import load_tokenizer
from serving import runtimes

# Where the tests and bench/ reach them: the pipeline's parts, by their old address.
__all__ = [
    "PRECISIONS",
    "Serving",
    "Staged",
    "Target",
    "check_compatible",
    "export_fused",
    "fuse_transformer",
    "next_version",
    "publish",
    "quantize_int8",
    "sample_batches",
    "stage",
    "to_openvino",
]


@dataclass
class Staged:
    """A converted model, built and checked, not yet published."""

    target: Target
    folder: Path  # the version folder's files
    config: mc.ModelConfig
    labels: tuple[str, ...]
    checkpoint: Path
    onnx_max_abs_diff: float | None  # ONNX Runtime vs PyTorch on sample windows (FP32 graphs)
    notes: list[str] = field(default_factory=list)

    def gate_candidate(self) -> str | None:
        """How `docq validate` runs this build here, or None where its runtime cannot run."""
        if self.target.runtime in ("onnx-cpu", "onnxruntime"):
            return f"onnx:{self.folder / 'model.onnx'}"
        if self.target.runtime == "openvino-cpu":
            return f"openvino:{self.target.dtype}:{self.folder / 'model.xml'}"
        if self.target.runtime == "torch-gpu" and torch.cuda.is_available():
            return f"torch:{self.target.dtype}:cuda"
        if self.target.runtime == "tensorrt" and torch.cuda.is_available():
            try:
                import tensorrt as _  # noqa: F401
            except ImportError:
                return None
            return f"tensorrt:{self.folder / 'model.plan'}"
        return None


def stage(checkpoint: Path, target: Target, workdir: Path) -> Staged:
    """Build and check the version folder's files for `target` under `workdir`."""
    model, labels = load_checkpoint(checkpoint)  # CheckpointRefused: one line, nothing built
    tokenizer = load_tokenizer(checkpoint)  # the export traces with the model's own ids
    check_window(checkpoint, model, target.max_seq_len)
    shutil.rmtree(workdir, ignore_errors=True)
    folder = workdir / "version"
    folder.mkdir(parents=True)
    diff: float | None = None
    notes: list[str] = []
    runtime = target.runtime
    if runtime in ("onnx-cpu", "onnxruntime", "tensorrt", "openvino-cpu"):
        onnx_path = workdir / "model.onnx"
        if target.fuse:
            fused = export_fused(model, onnx_path, workdir / "fused.onnx", tokenizer)
            notes.append(f"ONNX Runtime's transformer optimizer fused {fused}")
            onnx_path = workdir / "fused.onnx"
        else:
            export.export(model, onnx_path, tokenizer)  # onnx.checker's full check inside
        pad_id = tokenizer.pad_token_id or 0
        batches = sample_batches(model.config.vocab_size, target.max_seq_len, pad_id=pad_id)
        session = export.session(onnx_path, target.threads)
        diff = export.max_abs_diff(model, session, batches)
        notes.append(f"ONNX (opset {export.OPSET}) vs PyTorch: max |logit diff| {diff:.2e}")
        if runtime == "openvino-cpu":
            ov_diff = to_openvino(onnx_path, folder, target, model, batches)
            notes.append(f"OpenVINO ({target.dtype}) vs PyTorch: max |logit diff| {ov_diff:.2e}")
        elif runtime == "tensorrt":
            tensorrt.build_engine(onnx_path, folder / "model.plan", target.profile(), target.dtype)
            notes.append(f"TensorRT {target.dtype} engine, profile {target.profile()}")
        elif target.dtype == "int8":
            quantize_int8(onnx_path, folder / "model.onnx")
            notes.append("INT8 weights by ONNX Runtime dynamic quantization")
        else:
            shutil.copyfile(onnx_path, folder / "model.onnx")
        if runtime == "onnx-cpu":
            runtimes.install("onnx_cpu", folder)
    else:  # torch-gpu: the checkpoint itself, loaded by the runtime in its precision
        model.save_pretrained(folder, safe_serialization=True)
        runtimes.install("torch_gpu", folder)
    config = pbtxt.build(target.classifier_config(len(labels)))
    pbtxt.write(config, workdir / "config.pbtxt")
    return Staged(target, folder, config, labels, checkpoint, diff, notes)


def next_version(model_dir: Path) -> int:
    """One more than the highest numbered version folder (1 for a new model)."""
    versions = [int(p.name) for p in model_dir.glob("*") if p.is_dir() and p.name.isdigit()]
    return max(versions, default=0) + 1


def check_compatible(model_dir: Path, labels: tuple[str, ...]) -> None:
    """Refuse a version whose labels differ from those the model folder already serves.

    labels.txt and tokenizer/ are shared by every version of a model: a version with other
    labels would be read with the wrong names while both are served.
    """
    served = model_dir / "labels.txt"
    if served.exists():
        current = tuple(line for line in served.read_text(encoding="utf-8").splitlines() if line)
        if current != labels:
            raise ValueError(
                f"{model_dir.name} serves labels {list(current)}, the checkpoint has "
                f"{list(labels)}: publish it under another name"
            )


def publish(staged: Staged, repository: Path, version: int | None = None) -> Path:
    """Write the model folder's metadata and publish the version atomically; return it."""
    model_dir = repository / staged.target.name
    check_compatible(model_dir, staged.labels)
    version = version or next_version(model_dir)

    def fill(folder: Path) -> None:  # the runtime's package (docq_runtime/) is a folder
        shutil.copytree(staged.folder, folder, dirs_exist_ok=True)

    package.write_metadata(model_dir, staged.config, staged.labels, staged.checkpoint)
    return package.publish_version(model_dir, version, fill)
