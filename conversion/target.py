"""What `docq convert` builds: the Target (a served model's name, runtime, precision and
batching; torch-gpu's engine choices) and the Triton settings it writes, checked when made.

Its defaults per runtime are conversion/defaults.py's, where the measurements behind them
are cited; `docq convert`'s options (conversion/cli_convert.py) fill it.
"""

from __future__ import annotations

from dataclasses import dataclass

from conversion import pbtxt, tensorrt
from conversion.defaults import DEFAULTS, TORCH_GPU
from docq.text.aggregation import Aggregation

# Precisions each runtime can be converted to; the first is the default.
PRECISIONS: dict[str, tuple[str, ...]] = {
    "onnx-cpu": ("fp32", "int8"),
    # OpenVINO's inference precision (the IR holds FP32 weights either way).
    "openvino-cpu": ("fp32", "bf16"),
    "onnxruntime": ("fp32", "int8"),
    # fp8: the flat engine's FP8 e4m3 products (serving/runtimes/flat.py), behind the gate
    "torch-gpu": ("fp16", "bf16", "fp32", "fp8"),
    "tensorrt": ("fp16", "fp32"),
}
_TORCH_DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp8": "fp8"}
ENGINES = ("flat", "hf")  # torch-gpu: unpadded BERT-family encoder, or transformers padded
GELUS = ("erf", "tanh")
ATTENTIONS = ("flash", "cudnn")  # torch-gpu flat: the varlen attention kernel (docq_flat.py)
SMALL_ATTENTIONS = ("flash", "triton")  # torch-gpu flat: the small batches' graphs' kernel
GEMMS = ("cublas", "triton")  # torch-gpu flat: the large batches' matrix products


@dataclass(frozen=True)
class Serving:
    """How Triton batches and runs a model: the Target's own settings, else its runtime's
    defaults (conversion/defaults.py, where the measurements behind them are cited)."""

    max_queue_delay_us: int = 2000
    instance_count: int = 1


@dataclass(frozen=True)
class Target:
    """What to build: the served model's name, runtime, precision and batching settings."""

    name: str
    runtime: str = "onnx-cpu"
    precision: str | None = None  # None: the runtime's default (PRECISIONS[runtime][0])
    # onnx-cpu / onnxruntime: rewrite the ONNX graph with ONNX Runtime's transformer
    # optimizer (fused attention, skip-layer-norm, bias-GELU): the same FP32 maths in fewer,
    # faster kernels; the graph then needs ONNX Runtime's contrib operators.
    fuse: bool = False
    max_batch_size: int = 0  # 0: the runtime's default (conversion/defaults.py)
    max_seq_len: int = 512
    stride: int = 64
    aggregation: str = Aggregation.MEAN.value
    opt_batch: int = 2  # TensorRT: the batch the engine is tuned for
    instance_count: int | None = None  # None: the runtime's default (defaults.py)
    threads: int = 2  # onnx-cpu / torch-gpu on CPU: intra-op threads per instance
    max_queue_delay_us: int | None = None  # None: the runtime's default (defaults.py)
    # torch-gpu on a GPU: CUDA graphs per batch bucket and length bucket of this many tokens
    # (finer buckets pad less and capture more graphs at load). 0: eager PyTorch.
    graph_seq_step: int = 64
    # torch-gpu: batch buckets are the powers of two below this, then its multiples, up to
    # graph_max_batch; larger batches run eagerly: past 8 rows of 512 tokens their GPU time
    # covers the launches and eager skips the mask the graphs hold (9 rows: 10.9 ms eager,
    # 15.4 ms replayed in a 16-row graph, on an H200).
    graph_batch_step: int = 8
    graph_max_batch: int = 8
    # torch-gpu: `flat` runs each batch's real tokens only (ragged batches, varlen flash
    # attention, fused norms; BERT, RoBERTa, XLM-R checkpoints; others fall back to `hf`,
    # transformers on padded batches). With flat, the graphs are per token count: multiples
    # of graph_seq_step up to graph_max_batch x max_seq_len tokens.
    engine: str = "flat"
    # torch-gpu flat: the FFN's GELU, the tanh form fused into the GEMM's epilogue (one
    # pass fewer over [tokens, 4 x hidden]: 6% more sequences a second on the H200) or
    # exact (erf). tanh is the default because the gate passed it for both demo models on
    # 10,000 documents (docs/gpu-engine.md); `docq convert` gates every model, and a model
    # it refuses with tanh converts with `--gelu erf`.
    gelu: str = TORCH_GPU.gelu
    # torch-gpu flat: most real tokens in one request, the workers' token budget (written as
    # the `token_budget` parameter). Flat runs real tokens only, so the workers count real
    # ones, not rows x longest window. None: max_batch_size x max_seq_len, which a batch of
    # max_batch_size windows never passes. Lower, with a larger max_batch_size, keeps a
    # batch of long windows as short as before (latency, memory) while short windows fill
    # more rows per request.
    max_tokens: int | None = TORCH_GPU.max_tokens
    # torch-gpu flat fp8: which of a layer's products (qkv, out, up, down, joined by "+")
    # run in FP8, the rest FP16. `all` is fastest; a model whose activations one FP8 scale
    # per token cannot hold keeps some in FP16 (fewer FP8 products, less speed, the gate
    # decides).
    fp8_products: str = "all"
    # torch-gpu flat: the attention kernel, cudnn (cuDNN's fused kernel for the eager batches'
    # full windows, one block, the rest flash; checked against flash at load, flash where it
    # differs, refuses or is slower; the small batches' CUDA graphs run flash) or flash (FA2,
    # varlen). cudnn: 1,618 against 1,513 seq/s at 63 x 512 on the H200, the gate passed on
    # both demo models (docs/gpu-engine.md, 2026-12-04).
    attention: str = TORCH_GPU.attention
    # torch-gpu flat: the attention kernel of the small batches' CUDA graphs, flash (FA2's
    # varlen, 128-row query blocks) or triton (docq's kernel, 64-row blocks: twice the
    # programs for a batch of a few windows, which leave FA2's grid half the GPU); checked
    # against flash at load, flash where it fails.
    small_attention: str = TORCH_GPU.small_attention
    # torch-gpu flat: the large batches' matrix products, cublas (F.linear) or triton (docq's
    # persistent TMA GEMM, timed against cuBLAS at load per product and tiling, kept where
    # faster, for batches of 8,192 tokens or more; cuBLAS elsewhere, the log says why).
    gemm: str = TORCH_GPU.gemm
    # torch-gpu: execute() returns once a large batch's kernels and its copy back are
    # queued, a thread answers (serving/runtimes/torch_gpu.py); written as `overlap`.
    overlap: bool = TORCH_GPU.overlap

    def __post_init__(self) -> None:
        if self.runtime not in PRECISIONS:
            raise ValueError(
                f"unknown runtime {self.runtime!r}; expected one of {list(PRECISIONS)}"
            )
        if not self.max_batch_size:  # frozen: the runtime's default, set once here
            object.__setattr__(self, "max_batch_size", DEFAULTS[self.runtime].max_batch_size)
        if self.max_batch_size < 1:
            raise ValueError("max_batch_size must be >= 1")
        if self.precision is not None and self.precision not in PRECISIONS[self.runtime]:
            raise ValueError(
                f"runtime {self.runtime} is built in {'/'.join(PRECISIONS[self.runtime])}, "
                f"not {self.precision}"
            )
        Aggregation(self.aggregation)  # ValueError for an unknown one
        if self.engine not in ENGINES or self.gelu not in GELUS:
            raise ValueError(f"engine must be one of {ENGINES} and gelu one of {GELUS}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}")
        if self.small_attention not in SMALL_ATTENTIONS:
            raise ValueError(f"small_attention must be one of {SMALL_ATTENTIONS}")
        if self.gemm not in GEMMS:
            raise ValueError(f"gemm must be one of {GEMMS}")
        if self.dtype == "fp8" and self.engine != "flat":
            raise ValueError("fp8 needs the flat engine")
        if self.fp8_products != "all" and self.dtype != "fp8":
            raise ValueError("fp8_products chooses among FP8 products: only precision fp8")
        _check_fp8_products(self.fp8_products)
        if self.fuse and self.runtime not in ("onnx-cpu", "onnxruntime"):
            raise ValueError(f"fuse rewrites ONNX graphs: runtime {self.runtime} has none")
        if self.max_tokens is not None and not self.ragged:
            raise ValueError("max_tokens budgets real tokens: only torch-gpu's flat engine")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")

    @property
    def ragged(self) -> bool:
        """Triton may batch requests of different lengths: the runtime reads each request's
        own tensors and runs their real tokens flat (torch-gpu's flat engine)."""
        return self.runtime == "torch-gpu" and self.engine == "flat"

    @property
    def dtype(self) -> str:
        return self.precision or PRECISIONS[self.runtime][0]

    @property
    def serving(self) -> Serving:
        """The batching settings: the Target's own, else the runtime's defaults."""
        default = DEFAULTS[self.runtime]
        return Serving(
            default.max_queue_delay_us
            if self.max_queue_delay_us is None
            else self.max_queue_delay_us,
            default.instance_count if self.instance_count is None else self.instance_count,
        )

    def profile(self) -> tensorrt.Profile:
        return tensorrt.profile(self.max_batch_size, self.max_seq_len, self.opt_batch)

    def classifier_config(self, num_labels: int) -> pbtxt.ClassifierConfig:
        extra = {"precision": self.dtype}
        if self.runtime in ("onnx-cpu", "openvino-cpu"):
            extra["intra_op_threads"] = str(self.threads)
        if self.fuse:
            extra["graph"] = "fused"
        if self.runtime == "torch-gpu":
            extra["dtype"] = _TORCH_DTYPE_NAMES[self.dtype]
            extra["intra_op_threads"] = str(self.threads)
            extra["cuda_graphs"] = "true" if self.graph_seq_step else "false"
            extra["graph_seq_step"] = str(self.graph_seq_step or self.max_seq_len)
            extra["graph_batch_step"] = str(self.graph_batch_step)
            extra["graph_max_batch"] = str(self.graph_max_batch)
            extra["engine"] = self.engine
            extra["gelu"] = self.gelu
            extra["attention"] = self.attention
            extra["small_attention"] = self.small_attention
            extra["gemm"] = self.gemm
            extra["overlap"] = "true" if self.overlap else "false"
            if self.dtype == "fp8":
                extra["fp8_products"] = self.fp8_products
        if self.ragged:
            budget = self.max_tokens or self.max_batch_size * self.max_seq_len
            extra["token_budget"] = str(budget)  # real tokens (docq/text/packing.py)
        if self.runtime == "tensorrt":
            extra["profile"] = str(self.profile())
        return pbtxt.ClassifierConfig(
            name=self.name,
            runtime=self.runtime,
            num_labels=num_labels,
            # An engine takes no batch beyond its profile's max: the config says the same.
            max_batch_size=(
                self.profile().max_batch_size if self.runtime == "tensorrt" else self.max_batch_size
            ),
            max_seq_len=self.max_seq_len,
            stride=self.stride,
            aggregation=self.aggregation,
            max_queue_delay_us=self.serving.max_queue_delay_us,
            instance_count=self.serving.instance_count,
            ragged=self.ragged,
            extra_parameters=extra,
        )


FP8_PRODUCTS = ("qkv", "out", "up", "down")  # serving/runtimes/flat.py's PRODUCTS


def _check_fp8_products(spec: str) -> None:
    names = spec.replace("+", ",").split(",")
    if spec != "all" and (not spec or set(names) - set(FP8_PRODUCTS)):
        raise ValueError(
            f"fp8_products must be 'all' or {'+'.join(FP8_PRODUCTS)} parts, not {spec!r}"
        )
