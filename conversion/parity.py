"""The accuracy-parity gate: a candidate runtime against the PyTorch FP32 reference.

Both models classify the same labelled documents the way docq serves them: every document
tokenized whole (`docq.text.tokenizing`), cut into windows (`docq.text.windowing`), windows
packed into batches (`docq.text.packing`), window logits combined per document
(`docq.text.aggregation`). The report gives label agreement between the two, the accuracy
of each against the gold labels and their difference in points, and the largest and mean
absolute difference of window logits. A candidate passes when the accuracy difference is
within +-0.05 pt and agreement is at least 99.5% (the thresholds the old invoice model was
accepted under); `docq convert --publish` refuses one that does not, unless forced.

    docq validate build/doc-type/checkpoint --candidate onnx:model_repository/doc-type/1/model.onnx
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerFast

from conversion.evaluate import Runner, window_logits
from corpus.doc_type import LabelledDocument
from docq.text.aggregation import Aggregation, aggregate
from docq.text.tokenizing import window_spec
from docq.text.tokens import windows_of

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Thresholds:
    """When a candidate is good enough to publish."""

    max_accuracy_diff_pt: float = 0.05  # |candidate - reference accuracy|, percentage points
    min_agreement: float = 0.995  # share of documents where both give the same label


@dataclass(frozen=True)
class Windowing:
    """How documents become model inputs: the served model's parameters."""

    max_seq_len: int = 512
    stride: int = 64
    aggregation: str = Aggregation.MEAN.value
    batch_size: int = 8  # windows per model call; padding follows the packer's sort


@dataclass
class ParityReport:
    """Everything `docq validate` measured, as written to JSON and markdown."""

    reference: str
    candidate: str
    documents: int
    windows: int
    labels: list[str]
    agreement: float
    reference_accuracy: float
    candidate_accuracy: float
    accuracy_diff_pt: float  # candidate minus reference, in percentage points
    max_abs_logit_diff: float  # over every logit of every window
    mean_abs_logit_diff: float
    max_abs_score_diff: float  # over every document's aggregated probabilities
    thresholds: Thresholds
    passed: bool
    failures: list[str]
    windowing: Windowing
    source: str  # where the documents came from
    seconds: dict[str, float]
    environment: dict[str, str]
    disagreements: list[dict[str, str]] = field(default_factory=list)  # the first few

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False) + "\n"

    def to_markdown(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        t = self.thresholds
        rows = [
            ("documents (windows)", f"{self.documents:,} ({self.windows:,})"),
            ("label agreement", f"{self.agreement:.4%} (needs >= {t.min_agreement:.1%})"),
            ("reference accuracy", f"{self.reference_accuracy:.4%}"),
            ("candidate accuracy", f"{self.candidate_accuracy:.4%}"),
            (
                "accuracy difference",
                f"{self.accuracy_diff_pt:+.3f} pt (needs within +-{t.max_accuracy_diff_pt} pt)",
            ),
            ("max abs logit diff", f"{self.max_abs_logit_diff:.3e}"),
            ("mean abs logit diff", f"{self.mean_abs_logit_diff:.3e}"),
            ("max abs score diff", f"{self.max_abs_score_diff:.3e}"),
            (
                "windowing",
                f"{self.windowing.max_seq_len} tokens, stride {self.windowing.stride}, "
                f"{self.windowing.aggregation}",
            ),
            ("documents from", self.source),
            (
                "time",
                ", ".join(f"{k} {v:.1f} s" for k, v in self.seconds.items())
                + " (a reference shared by several candidates runs once)",
            ),
            ("environment", ", ".join(f"{k} {v}" for k, v in self.environment.items())),
        ]
        lines = [
            f"#### {verdict}: `{self.candidate}` vs `{self.reference}`",
            "",
            "| | |",
            "| --- | --- |",
            *(f"| {k} | {v} |" for k, v in rows),
        ]
        if self.failures:
            lines += ["", *(f"- {f}" for f in self.failures)]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ParityReport:
        data = json.loads(text)
        data["thresholds"] = Thresholds(**data["thresholds"])
        data["windowing"] = Windowing(**data["windowing"])
        return cls(**data)

    def write(self, prefix: Path) -> tuple[Path, Path]:
        """Write `<prefix>.json` and `<prefix>.md`; return both paths."""
        prefix.parent.mkdir(parents=True, exist_ok=True)
        json_path, md_path = prefix.with_suffix(".json"), prefix.with_suffix(".md")
        json_path.write_text(self.to_json(), encoding="utf-8")
        md_path.write_text(self.to_markdown(), encoding="utf-8")
        return json_path, md_path


def verdict(
    agreement: float, accuracy_diff_pt: float, thresholds: Thresholds
) -> tuple[bool, list[str]]:
    """Whether the numbers pass, and why not. NaN never passes."""
    failures = []
    if not agreement >= thresholds.min_agreement:
        failures.append(f"label agreement {agreement:.4%} is below {thresholds.min_agreement:.2%}")
    if not abs(accuracy_diff_pt) <= thresholds.max_accuracy_diff_pt + 1e-9:
        failures.append(
            f"accuracy differs by {accuracy_diff_pt:+.3f} pt, more than "
            f"+-{thresholds.max_accuracy_diff_pt} pt"
        )
    return not failures, failures


def compare(
    reference: Runner,
    candidate: Runner,
    docs: Sequence[LabelledDocument],
    labels: Sequence[str],
    tokenizer: PreTrainedTokenizerFast,
    *,
    names: tuple[str, str],
    windowing: Windowing = Windowing(),
    thresholds: Thresholds = Thresholds(),
    source: str = "",
    environment: dict[str, str] | None = None,
) -> ParityReport:
    """Classify `docs` with both runners through the serving path and compare them."""
    if not docs:
        raise ValueError("parity needs at least one document")
    unknown = sorted({d.label for d in docs} - set(labels))
    if unknown:
        raise ValueError(f"gold labels {unknown} are not labels of the model {list(labels)}")
    spec = window_spec(tokenizer, windowing.max_seq_len, windowing.stride)
    per_doc = windows_of(tokenizer, [d.text for d in docs], spec)
    flat = [w for ws in per_doc for w in ws]
    seconds: dict[str, float] = {}
    logits: list[npt.NDArray[np.float32]] = []
    for name, run in (("reference", reference), ("candidate", candidate)):
        start = time.perf_counter()
        logits.append(window_logits(run, flat, windowing.batch_size))
        seconds[name] = round(time.perf_counter() - start, 1)
    ref_logits, cand_logits = logits
    if not np.isfinite(ref_logits).all():
        raise ValueError(f"the reference {names[0]} produced non-finite logits")
    diff = np.abs(ref_logits.astype(np.float64) - cand_logits.astype(np.float64))
    how = Aggregation(windowing.aggregation)
    ref_labels, cand_labels, score_diff = [], [], 0.0
    start = 0
    for ws in per_doc:
        end = start + len(ws)
        lengths = [w.length for w in ws]
        r = aggregate(ref_logits[start:end], lengths, labels, how)
        c = aggregate(cand_logits[start:end], lengths, labels, how)
        ref_labels.append(r.label)
        cand_labels.append(c.label)
        score_diff = max(score_diff, *(abs(r.scores[k] - c.scores[k]) for k in labels))
        start = end
    gold = [d.label for d in docs]
    n = len(docs)
    agreement = sum(a == b for a, b in zip(ref_labels, cand_labels, strict=True)) / n
    ref_acc = sum(a == g for a, g in zip(ref_labels, gold, strict=True)) / n
    cand_acc = sum(a == g for a, g in zip(cand_labels, gold, strict=True)) / n
    diff_pt = (cand_acc - ref_acc) * 100
    max_diff = float(diff.max())
    passed, failures = verdict(agreement, diff_pt, thresholds)
    if not math.isfinite(max_diff):
        passed, failures = False, [*failures, "the candidate produced non-finite logits"]
    return ParityReport(
        reference=names[0],
        candidate=names[1],
        documents=n,
        windows=len(flat),
        labels=list(labels),
        agreement=agreement,
        reference_accuracy=ref_acc,
        candidate_accuracy=cand_acc,
        accuracy_diff_pt=diff_pt,
        max_abs_logit_diff=max_diff,
        mean_abs_logit_diff=float(diff.mean()),
        max_abs_score_diff=score_diff,
        thresholds=thresholds,
        passed=passed,
        failures=failures,
        windowing=windowing,
        source=source,
        seconds=seconds,
        environment=environment or describe_environment(),
        disagreements=[
            {"id": d.id, "gold": d.label, "reference": r, "candidate": c}
            for d, r, c in zip(docs, ref_labels, cand_labels, strict=True)
            if r != c
        ][:20],
    )


def describe_environment() -> dict[str, str]:
    env = {"torch": torch.__version__, "cpu": platform.processor() or platform.machine()}
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


# --- runners: (input_ids, attention_mask) -> logits, each a way a model can be served ----


def torch_runner(model: PreTrainedModel, device: str = "cpu", dtype: str = "fp32") -> Runner:
    """The checkpoint in PyTorch on `device` in `dtype` (fp32 is the reference).

    FP32 on CUDA is true FP32: TF32 matrix maths is switched off, or it would not be a
    reference. Logits come back as float32 whatever the dtype.
    """
    if dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(TORCH_DTYPES)}, not {dtype!r}")
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    moved: torch.nn.Module = copy.deepcopy(model)
    moved = moved.to(device=device, dtype=TORCH_DTYPES[dtype]).eval()

    @torch.inference_mode()
    def run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        ids, mask = (torch.from_numpy(a).to(device) for a in batch)
        logits = moved(input_ids=ids, attention_mask=mask).logits
        return logits.float().cpu().numpy()

    return run


def onnx_runner(path: Path, threads: int = 2) -> Runner:
    """ONNX Runtime on CPU, configured as the onnx-cpu runtime serves it."""
    from conversion import export

    session = export.session(path, threads)
    return lambda batch: export.run(session, batch).astype(np.float32, copy=False)


def openvino_runner(path: Path, precision: str = "fp32", threads: int = 2) -> Runner:
    """OpenVINO on CPU through the openvino-cpu runtime's own model code (loaded in-process
    from serving/runtimes/, as Triton's stub would run it), on the IR at `path`."""
    from serving import pb_stub
    from serving.runtimes import SOURCES

    if path.name != "model.xml":
        raise ValueError(f"the openvino-cpu runtime serves model.xml, not {path.name}")
    served = pb_stub.instance(
        pb_stub.load_runtime(SOURCES / "openvino_cpu.py"),
        path.parent,
        "CPU",
        0,
        precision=precision,
        intra_op_threads=str(threads),
    )
    return lambda batch: served._run(*batch)


def triton_runner(url: str, model: str, timeout_s: float = 300.0) -> Runner:
    """The model as a running Triton serves it, over gRPC."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)

    def run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        inputs = []
        for name, array in zip(("input_ids", "attention_mask"), batch, strict=True):
            tensor = grpcclient.InferInput(name, list(array.shape), "INT64")
            tensor.set_data_from_numpy(np.ascontiguousarray(array))
            inputs.append(tensor)
        result = client.infer(model, inputs, client_timeout=timeout_s)
        out = result.as_numpy("logits")
        assert out is not None
        return out.astype(np.float32, copy=False)

    return run


def tensorrt_runner(plan: Path) -> Runner:
    """A TensorRT engine (TensorRT >= 10 and a CUDA GPU), through torch's CUDA tensors."""
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    engine = trt.Runtime(logger).deserialize_cuda_engine(plan.read_bytes())
    context = engine.create_execution_context()

    def run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        tensors = {
            name: torch.from_numpy(np.ascontiguousarray(a)).cuda()
            for name, a in zip(("input_ids", "attention_mask"), batch, strict=True)
        }
        for name, t in tensors.items():
            context.set_input_shape(name, tuple(t.shape))
            context.set_tensor_address(name, t.data_ptr())
        out = torch.empty(tuple(context.get_tensor_shape("logits")), device="cuda")
        context.set_tensor_address("logits", out.data_ptr())
        stream = torch.cuda.current_stream()
        if not context.execute_async_v3(stream.cuda_stream):
            raise RuntimeError("TensorRT execution failed")
        stream.synchronize()
        return out.cpu().numpy()

    return run


def cached(run: Runner) -> Runner:
    """`run`, remembering its logits per batch: one reference run serves several candidates."""
    memo: dict[bytes, npt.NDArray[np.float32]] = {}

    def cached_run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        ids, mask = batch
        key = hashlib.blake2b(
            np.asarray(ids.shape).tobytes() + ids.tobytes() + mask.tobytes(), digest_size=16
        ).digest()
        if key not in memo:
            memo[key] = run(batch)
        return memo[key]

    return cached_run


def candidate(spec: str, model: PreTrainedModel, threads: int = 2) -> Runner:
    """A runner from its command-line form.

    onnx:PATH               ONNX Runtime on CPU (FP32, fused or quantized graph)
    openvino:[PREC:]PATH    OpenVINO on CPU, the IR at PATH (model.xml), in fp32 or bf16
    torch:DTYPE[:DEVICE]    the reference checkpoint in fp16/bf16/fp32 on cpu or cuda[:N]
    triton:HOST:PORT/MODEL  a model a running Triton serves (the real runtime)
    tensorrt:PATH           a TensorRT engine (needs tensorrt and a GPU)
    """
    kind, _, rest = spec.partition(":")
    if kind == "onnx" and rest:
        return onnx_runner(Path(rest), threads)
    if kind == "openvino" and rest:
        precision, _, path = rest.partition(":")
        if precision not in ("fp32", "bf16"):
            precision, path = "fp32", rest
        return openvino_runner(Path(path), precision, threads)
    if kind == "torch" and rest:
        dtype, _, device = rest.partition(":")
        return torch_runner(model, device or "cpu", dtype)
    if kind == "triton" and "/" in rest:
        url, _, name = rest.rpartition("/")
        return triton_runner(url, name)
    if kind == "tensorrt" and rest:
        return tensorrt_runner(Path(rest))
    raise ValueError(
        f"cannot read candidate {spec!r}: expected onnx:PATH, openvino:[PREC:]PATH, "
        "torch:DTYPE[:DEVICE], triton:HOST:PORT/MODEL or tensorrt:PATH"
    )


def read_documents(path: Path) -> list[LabelledDocument]:
    """Labelled documents from NDJSON: one `{"id", "text", "label"}` per line."""
    docs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row: dict[str, Any] = json.loads(line)
            docs.append(LabelledDocument(id=str(row["id"]), text=row["text"], label=row["label"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: expected {{'id', 'text', 'label'}}: {exc}") from exc
    return docs


def synthetic(corpus: str, n: int, seed: int) -> list[LabelledDocument]:
    """`n` seeded documents of a demo model's corpus ("doc-type" or "doc-lang")."""
    generators: dict[str, Callable[[int, int], list[LabelledDocument]]]
    from corpus import doc_lang as corpus_lang
    from corpus import doc_type

    generators = {"doc-type": doc_type.generate, "doc-lang": corpus_lang.generate}
    if corpus not in generators:
        raise ValueError(f"unknown corpus {corpus!r}; expected one of {sorted(generators)}")
    return generators[corpus](n, seed)
