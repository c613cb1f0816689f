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

Here: the measuring (`compare`) and the documents it reads. The thresholds, the verdict and
the report are conversion/parity_report.py's; the ways to run a model, conversion/runners.py.
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from transformers import PreTrainedTokenizerFast

from conversion.evaluate import Runner, window_logits
from conversion.parity_report import ParityReport, Thresholds, Windowing, verdict
from conversion.runners import (
    TORCH_DTYPES,
    cached,
    candidate,
    onnx_runner,
    openvino_runner,
    tensorrt_runner,
    torch_runner,
    triton_runner,
)
from corpus.doc_type import LabelledDocument
from docq.text.aggregation import Aggregation, aggregate
from docq.text.tokenizing import window_spec
from docq.text.tokens import windows_of

# The gate's whole vocabulary, where `docq validate`, the tests and bench/ reach it: the
# report (conversion/parity_report.py) and the runners (conversion/runners.py) too.
__all__ = [
    "TORCH_DTYPES",
    "ParityReport",
    "Thresholds",
    "Windowing",
    "cached",
    "candidate",
    "compare",
    "describe_environment",
    "onnx_runner",
    "openvino_runner",
    "read_documents",
    "synthetic",
    "tensorrt_runner",
    "torch_runner",
    "triton_runner",
    "verdict",
]

# compare's defaults (both frozen): windows as docq serves them, the thresholds of the gate
SERVED = Windowing()
GATE = Thresholds()


def compare(
    reference: Runner,
    candidate: Runner,
    docs: Sequence[LabelledDocument],
    labels: Sequence[str],
    tokenizer: PreTrainedTokenizerFast,
    *,
    names: tuple[str, str],
    windowing: Windowing = SERVED,
    thresholds: Thresholds = GATE,
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
