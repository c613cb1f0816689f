"""TensorRT engines from the ONNX graph: profile shapes, the trtexec command, the build.

An engine is built for one range of input shapes (its optimisation profile): `min`, `opt`
and `max` (batch x sequence) for `input_ids` and `attention_mask`. The profile is derived
from the same batching settings the Triton config and the workers' packer read, so the
three cannot disagree: the profile's max batch is the config's `max_batch_size`, its max
sequence is the model's `max_seq_len`. The default (1x1 / 2x512 / 7x512) is the profile the
old invoice classifier was served with.

TensorRT is not installable on the machines this project is developed on (its wheels
download from NVIDIA's own index); `build_engine` runs where `trtexec` or the `tensorrt`
Python package exists, e.g. inside the NGC Triton container. Engines need TensorRT >= 10
(INT64 inputs, as the Triton config declares them).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from conversion.export import INPUTS

PRECISIONS = ("fp16", "fp32")


@dataclass(frozen=True)
class Shape:
    """One (batch, sequence) point of a profile."""

    batch: int
    sequence: int

    def __str__(self) -> str:
        return f"{self.batch}x{self.sequence}"


@dataclass(frozen=True)
class Profile:
    """An engine's optimisation profile: the smallest, the tuned-for and the largest shape."""

    min: Shape
    opt: Shape
    max: Shape

    def __post_init__(self) -> None:
        for axis in ("batch", "sequence"):
            lo, mid, hi = (getattr(s, axis) for s in (self.min, self.opt, self.max))
            if not 1 <= lo <= mid <= hi:
                raise ValueError(f"profile {self}: need 1 <= min <= opt <= max for {axis}")

    @property
    def max_batch_size(self) -> int:
        """What config.pbtxt's max_batch_size must be: the engine takes no larger batch."""
        return self.max.batch

    def __str__(self) -> str:
        return f"{self.min} / {self.opt} / {self.max}"


def profile(max_batch_size: int = 7, max_seq_len: int = 512, opt_batch: int = 2) -> Profile:
    """The profile for a model served with these batching settings.

    min 1x1: any window the workers cut (they never pad to a fixed length) fits.
    opt opt_batch x max_seq_len: the shape most requests have under load (full windows,
    the batch the dynamic batcher usually forms); TensorRT picks its kernels for it.
    max max_batch_size x max_seq_len: the largest batch the packer and Triton send.
    """
    return Profile(
        min=Shape(1, 1),
        opt=Shape(min(opt_batch, max_batch_size), max_seq_len),
        max=Shape(max_batch_size, max_seq_len),
    )


def _shapes(shape: Shape) -> str:
    return ",".join(f"{name}:{shape}" for name in INPUTS)


def trtexec_command(
    onnx_path: Path,
    engine_path: Path,
    prof: Profile,
    precision: str = "fp16",
    *,
    trtexec: str = "trtexec",
    workspace_mib: int = 4096,
) -> list[str]:
    """The trtexec command line that builds `engine_path` from `onnx_path` for `prof`."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    cmd = [
        trtexec,
        f"--onnx={onnx_path}",
        f"--saveEngine={engine_path}",
        f"--minShapes={_shapes(prof.min)}",
        f"--optShapes={_shapes(prof.opt)}",
        f"--maxShapes={_shapes(prof.max)}",
        f"--memPoolSize=workspace:{workspace_mib}M",
        "--skipInference",  # build only; parity is measured by docq validate
    ]
    if precision == "fp16":
        # Layers may run in FP16; inputs (INT64) and logits (FP32) keep their types, as
        # config.pbtxt declares them.
        cmd.append("--fp16")
    return cmd


def available() -> str | None:
    """How an engine can be built here: "trtexec", "python" (the tensorrt package) or None."""
    if shutil.which("trtexec"):
        return "trtexec"
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        return None
    return "python"


def build_engine(
    onnx_path: Path, engine_path: Path, prof: Profile, precision: str = "fp16"
) -> Path:
    """Build the engine with trtexec, or with TensorRT's Python builder when only that exists."""
    how = available()
    if how is None:
        raise RuntimeError(
            "TensorRT is not available here (no trtexec on PATH, no tensorrt package): build "
            "the tensorrt runtime inside the NGC Triton container"
        )
    if how == "trtexec":
        subprocess.run(trtexec_command(onnx_path, engine_path, prof, precision), check=True)
    else:
        engine_path.write_bytes(_python_build(onnx_path, prof, precision))
    return engine_path


def _python_build(onnx_path: Path, prof: Profile, precision: str) -> bytes:
    """The same build as trtexec_command, through the TensorRT Python API."""
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)  # explicit batch is the only mode in TensorRT 10
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(onnx_path)):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise RuntimeError(f"TensorRT cannot parse {onnx_path}: {errors}")
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 4096 << 20)
    if precision == "fp16":
        config.set_flag(trt.BuilderFlag.FP16)
    opt_profile = builder.create_optimization_profile()
    for name in INPUTS:
        opt_profile.set_shape(
            name,
            (prof.min.batch, prof.min.sequence),
            (prof.opt.batch, prof.opt.sequence),
            (prof.max.batch, prof.max.sequence),
        )
    config.add_optimization_profile(opt_profile)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise RuntimeError(f"TensorRT failed to build an engine from {onnx_path}")
    return bytes(serialized)
