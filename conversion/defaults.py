"""What `docq convert` builds unless told otherwise, per runtime: in this one place.

Each runtime's defaults are the configuration its benchmarks found best. conversion/target.py's
Target takes every default from here, `docq convert --help` prints `describe()`, the GPU
benches convert with these and no overrides (bench/gpu/model.py: a variant that overrides
one carries it in its label), and tests/bench/test_gpu_defaults.py fails when the
configuration line of the GPU sections of docs/performance.md (`config_line`)
and this table drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Defaults:
    """One runtime's defaults. The torch-gpu fields (gelu and after) mean nothing elsewhere."""

    max_batch_size: int = 8  # windows per model execution (Triton's max_batch_size)
    # How long Triton's batcher may hold a request to grow a batch: throughput for latency.
    max_queue_delay_us: int = 2000
    instance_count: int = 1
    # torch-gpu flat: real tokens per request, the workers' budget; None: max_batch_size x
    # max_seq_len, so one worker's request can fill an execution by itself.
    max_tokens: int | None = None
    gelu: str = "tanh"  # the FFN's GELU: tanh in the GEMM epilogue, or erf (exact)
    attention: str = "cudnn"  # large eager batches' full windows: cuDNN's block, or flash
    small_attention: str = "flash"  # the small batches' CUDA graphs' attention kernel
    gemm: str = "cublas"  # the large batches' products: cuBLAS, or docq's Triton GEMM
    overlap: bool = True  # execute() returns once a large batch is queued on the GPU
    why: str = ""  # the measurement behind them, and what they cost


# The CPU runtimes keep the converter's first defaults: their benches (docs/performance.md)
# measured them with 8 windows a batch and a 2 ms batcher delay and found nothing better.
CPU = Defaults(why="Measured: 8 windows a batch, 2 ms batcher delay (docs/performance.md)")

# torch-gpu, from the H200 and H100 runs in docs/performance.md
# (docs/gpu-engine.md says why each choice):
# - 128 windows a batch and the workers' budget at 128 x 512 tokens: the pipeline's best,
#   769.8 docs/s on an H200 (747-752 at 64-window requests); the converter's old 8 gave
#   587.5 against 777.8 at 128 on an H100, same machine type. Served (7, 512): 1,636 seq/s
#   at 128 against 1,575 at 64 (two of three runs).
# - the cost: a small job waits behind batches of up to 128 windows: 3-document jobs during a
#   20,000-document job p95 0.19-0.26 s at 128 against 0.05 s at 8 (H100), and a saturated
#   (2, 512) load lost 1-9% to 64 in all three overlap runs. `--max-batch-size 8` (and a
#   budget to match) is the latency-first choice.
# - no batcher delay (requests queue while the GPU runs the batch before; a delay only adds
#   latency: (1, 512) 5.6 -> 3.5 ms), one instance (a second served no more), the tanh GELU
#   (+6%, gate passed), cuDNN's block attention (1,618 against 1,513 seq/s in-process at 63 x
#   512, gate passed), flash in the graphs and cuBLAS (docq's own kernels lost on the H100),
#   the overlapped execute ((2, 512) +7.5-7.8%, three runs).
TORCH_GPU = Defaults(
    max_batch_size=128,
    max_queue_delay_us=0,
    why=(
        "The pipeline's best, 769.8 docs/s on an H200 (docs/performance.md); small "
        "jobs during a bulk job wait behind batches of 128 windows: p95 0.19-0.26 s against "
        "0.05 s at --max-batch-size 8 (H100), the latency-first choice"
    ),
)

DEFAULTS: dict[str, Defaults] = {
    "onnx-cpu": CPU,
    "openvino-cpu": CPU,
    "onnxruntime": CPU,
    "torch-gpu": TORCH_GPU,
    "tensorrt": Defaults(why="The engine's profile is built for this batch (trtexec)"),
}


def budget(runtime: str, max_seq_len: int = 512) -> int:
    """The workers' token budget a runtime's defaults give (torch-gpu flat)."""
    d = DEFAULTS[runtime]
    return d.max_tokens or d.max_batch_size * max_seq_len


def config_line(runtime: str, max_seq_len: int = 512) -> str:
    """The defaults as one line: what the RESULTS docs state their runs converted with."""
    d = DEFAULTS[runtime]
    parts = [
        f"max_batch_size {d.max_batch_size}",
        f"queue delay {d.max_queue_delay_us} us",
        f"{d.instance_count} instance{'s' if d.instance_count > 1 else ''}",
    ]
    if runtime == "torch-gpu":
        parts += [
            f"token budget {budget(runtime, max_seq_len)}",
            f"gelu {d.gelu}",
            f"attention {d.attention}",
            f"small_attention {d.small_attention}",
            f"gemm {d.gemm}",
            f"overlap {'on' if d.overlap else 'off'}",
        ]
    return ", ".join(parts)


def describe() -> str:
    """Every runtime's defaults and why, for `docq convert --help`."""
    return "\n\n".join(
        f"{runtime}: {config_line(runtime)}. {d.why}." for runtime, d in DEFAULTS.items()
    )
