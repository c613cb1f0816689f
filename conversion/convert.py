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
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerFast
from tritonclient.grpc import model_config_pb2 as mc

from conversion import export, package, pbtxt, tensorrt
from conversion.checkpoint import check_window, load_checkpoint
from conversion.defaults import DEFAULTS, TORCH_GPU
from docq.text.aggregation import Aggregation
from docq.text.tokenizing import load_tokenizer
from serving import runtimes

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


def sample_batches(
    vocab_size: int, max_seq_len: int, seed: int = 0, pad_id: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random token batches with padded rows (`pad_id`: the tokenizer's) and lengths up to
    max_seq_len: ONNX vs PyTorch. A model's positions end at max_seq_len (RoBERTa's)."""
    rng = np.random.default_rng(seed)
    batches = []
    for rows, longest in ((1, 2), (2, 17), (3, max_seq_len), (5, 129)):
        longest = min(longest, max_seq_len)
        ids = rng.integers(
            min(1000, vocab_size - 1), vocab_size, size=(rows, longest), dtype=np.int64
        )
        mask = np.ones_like(ids)
        for r in range(1, rows):  # every row but the first is padded
            mask[r, rng.integers(1, longest + 1) :] = 0
        ids[mask == 0] = pad_id
        batches.append((ids, mask))
    return batches


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


def export_fused(
    model: PreTrainedModel,
    plain: Path,
    fused: Path,
    tokenizer: PreTrainedTokenizerFast | None = None,
) -> dict[str, int]:
    """Export `model` to `plain` and its fused graph to `fused`; return the fused operators.

    The optimizer recognises attention in eager attention's graph, not in SDPA's, so the
    model is left on eager attention (callers that run it in PyTorch may switch back).
    """
    model.set_attn_implementation("eager")
    export.export(model, plain, tokenizer)  # onnx.checker's full check runs inside
    return fuse_transformer(model, plain, fused)


def fuse_transformer(model: PreTrainedModel, source: Path, dest: Path) -> dict[str, int]:
    """Rewrite an exported BERT-like graph with ONNX Runtime's transformer optimizer; return
    how many of each fused operator it made.

    Raises RuntimeError when it fused fewer Attention nodes than the model has layers: the
    graph was not recognised (an SDPA export, or an ONNX Runtime whose optimizer does not
    know this export's pattern: 1.30 fuses none of these graphs, 1.32 all), and a graph
    published as fused would be the plain one.
    """
    import onnxruntime
    from onnxruntime.transformers import optimizer

    config = model.config
    optimized = optimizer.optimize_model(
        str(source),
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
        opt_level=0,  # fusions only: the serving session applies ORT's own optimizations
    )
    stats = {op: n for op, n in optimized.get_fused_operator_statistics().items() if n}
    layers = config.num_hidden_layers
    if stats.get("Attention", 0) < layers:
        raise RuntimeError(
            f"ONNX Runtime {onnxruntime.__version__}'s optimizer fused "
            f"{stats.get('Attention', 0)} of {layers} attention blocks ({stats}): the graph was "
            "not recognised; export with eager attention, on the version the tests pin"
        )
    optimized.save_model_to_file(str(dest))
    return stats


def to_openvino(
    onnx_path: Path,
    folder: Path,
    target: Target,
    model: PreTrainedModel,
    batches: list[tuple[np.ndarray, np.ndarray]],
) -> float:
    """Convert the checked ONNX graph to OpenVINO IR (FP32 weights) in `folder`, install the
    runtime beside it, and return its largest |logit diff| against PyTorch, as served."""
    import openvino as ov

    from serving import pb_stub

    # compress_to_fp16 would halve the file and round every weight: parity first.
    ov.save_model(ov.convert_model(str(onnx_path)), str(folder / "model.xml"), False)
    runtimes.install("openvino_cpu", folder)
    served = pb_stub.instance(
        pb_stub.load_runtime(folder / "model.py"),
        folder,
        "CPU",
        target.max_batch_size,
        precision=target.dtype,
        intra_op_threads=str(target.threads),
    )
    worst = 0.0
    with torch.inference_mode():
        for ids, mask in batches:
            expected = model(
                input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)
            ).logits.numpy()
            worst = max(worst, float(np.abs(served._run(ids, mask) - expected).max()))
    served.finalize()
    return worst


def quantize_int8(source: Path, dest: Path) -> Path:
    """Dynamic INT8 quantization of the MatMul weights (activations quantized per batch)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(dest), weight_type=QuantType.QInt8)
    return dest


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


FP8_PRODUCTS = ("qkv", "out", "up", "down")  # serving/runtimes/flat.py's PRODUCTS


def _check_fp8_products(spec: str) -> None:
    names = spec.replace("+", ",").split(",")
    if spec != "all" and (not spec or set(names) - set(FP8_PRODUCTS)):
        raise ValueError(
            f"fp8_products must be 'all' or {'+'.join(FP8_PRODUCTS)} parts, not {spec!r}"
        )
