"""A published model's accuracy on the blind evaluation set (samples/eval/, issue 38), per
form users send: the frozen text, a PDF with a text layer, a DOCX, a scan at 300 dpi.

Each document is rendered in each form (bench.eval_forms; its bytes checked against
samples/eval/forms.sha256), read back through the workers' own extraction
(`docq.extract.extract` on the type `docq.extract.sniff` judges, as the API does: the
text as is, the PDF's text layer, the DOCX's paragraphs and tables, Tesseract OCR for
scans), then classified as docq serves it: the model's tokenizer, windows and aggregation
(docq.text, via conversion.evaluate) on the published
model_repository/<model>/1/model.onnx through ONNX Runtime on the CPU. doc-type is
measured on the set's doc-type documents, doc-lang on its doc-lang documents.

    python -m bench.accuracy_blind --model doc-type --forms text,pdf,docx,scan \\
        --walkthrough --out bench/runs/eval-blind-doc-type-cpu-2026-12-05.json

Extraction (OCR above all: about a core-second a page) is the slow part and needs no
model: `--reads-out FILE` stops after it, on a machine with more cores, and `--reads FILE`
classifies what such a run read. The table gives accuracy per form, per label and the
confusion; the JSON keeps every miss with the start of its extracted text.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.eval_forms import FORMS, Item, frozen, items, render, sha256
from docq.config import REPO_ROOT, Settings
from docq.errors import ExtractionFailed
from docq.extract import Limits, extract, sniff

TARGETS = {"text": 0.97, "pdf": 0.97, "docx": 0.97, "scan": 0.93}  # issue 38
WALKTHROUGH = REPO_ROOT / "samples" / "files"
TEXT_START = 200


def read(data: bytes, limits: Limits) -> dict[str, Any]:
    """The text extraction gives back for `data`, with its type, time and any error."""
    start = time.perf_counter()
    kind = sniff(data) or "text/plain"
    try:
        text, error = extract(data, kind, limits).text, None
    except ExtractionFailed as e:
        text, error = "", f"{e.code}: {e}"
    return {
        "type": kind,
        "text": text,
        "error": error,
        "seconds": round(time.perf_counter() - start, 3),
    }


def read_item(item: Item, form: str, files: Path | None, limits: Limits) -> dict[str, Any]:
    """One blind document in `form` (from `files` if rendered there, else rendered now)."""
    path = files / item.name(form) if files is not None else None
    data = path.read_bytes() if path is not None and path.is_file() else render(item, form)
    return {
        "file": item.name(form),
        "label": item.label,
        "sha256": sha256(data),
        **read(data, limits),
    }


def read_all(
    sets: tuple[str, ...],
    forms: tuple[str, ...],
    files: Path | None,
    processes: int,
    scan_every: int = 1,
) -> dict[str, list[dict[str, Any]]]:
    """{form: reads in manifest order} for every document of `sets` (of scans, only every
    `scan_every`th in manifest order: where OCR's core-seconds are not there to spend)."""
    # One OCR thread a process: the processes already fill the cores.
    limits = replace(Limits.from_settings(Settings()), ocr_threads=1)
    out: dict[str, list[dict[str, Any]]] = {}
    for form in forms:
        start = time.perf_counter()
        every = scan_every if form == "scan" else 1
        chosen = [i for i in items(sets) if i.index % every == 0]
        args = [(i, form, files, limits) for i in chosen]
        if processes > 1:
            with ProcessPoolExecutor(processes) as pool:
                out[form] = list(pool.map(read_item, *zip(*args, strict=True), chunksize=2))
        else:
            out[form] = [read_item(*a) for a in args]
        print(f"read {len(chosen)} {form} in {time.perf_counter() - start:.0f} s", flush=True)
    return out


def classifier(repository: Path, model: str, threads: int) -> tuple[Any, Any]:
    """(classify(texts) -> labels, labels) for the published model, as the workers run it."""
    from bench.corpus import repository_spec
    from conversion.evaluate import classify
    from conversion.parity import onnx_runner
    from docq.text.aggregation import Aggregation
    from docq.text.tokenizing import load_tokenizer, window_spec
    from docq.text.tokens import windows_of

    spec = repository_spec(repository, model)
    tokenizer = load_tokenizer(spec.tokenizer_dir)
    windowing = window_spec(tokenizer, spec.max_seq_len, spec.stride)
    run = onnx_runner(repository / model / "1" / "model.onnx", threads)

    def labels_of(texts: list[str]) -> list[str]:
        windows = windows_of(tokenizer, texts, windowing)
        found = classify(
            run, windows, spec.labels, Aggregation(spec.aggregation), spec.max_batch_size
        )
        return [p.label for p in found]

    return labels_of, list(spec.labels)


def confusion(truth: list[str], predicted: list[str], labels: list[str]) -> dict[str, Any]:
    """{true label: {predicted label: count}}; a failed extraction counts as its own column."""
    counts = Counter(zip(truth, predicted, strict=True))
    columns = [*labels, *sorted({p for p in predicted} - set(labels))]
    return {t: {p: counts[(t, p)] for p in columns} for t in labels}


def score(
    reads: list[dict[str, Any]], predicted: list[str], labels: list[str], form: str
) -> dict[str, Any]:
    """One form's figures: accuracy, per label, confusion, and every miss."""
    digests = frozen()
    truth = [r["label"] for r in reads]
    got = [
        p if not r["error"] else "(extraction failed)"
        for r, p in zip(reads, predicted, strict=True)
    ]
    hits = [g == t for g, t in zip(got, truth, strict=True)]
    per_file_format: dict[str, list[bool]] = {}
    for r, h in zip(reads, hits, strict=True):
        per_file_format.setdefault(r["file"].rsplit(".", 1)[1], []).append(h)
    return {
        "n": len(reads),
        "accuracy": round(sum(hits) / max(len(hits), 1), 4),
        "target": TARGETS.get(form),
        "per_label": {
            label: round(
                sum(h for h, t in zip(hits, truth, strict=True) if t == label)
                / max(truth.count(label), 1),
                4,
            )
            for label in labels
        },
        "support": {label: truth.count(label) for label in labels},
        "confusion": confusion(truth, got, labels),
        "by_file_format": {
            ext: {"n": len(h), "accuracy": round(sum(h) / len(h), 4)}
            for ext, h in sorted(per_file_format.items())
        },
        "extraction_failed": sum(1 for r in reads if r["error"]),
        "bytes_match_forms_sha256": sum(
            1 for r in reads if digests.get(r["file"]) == r["sha256"] or r["file"].endswith(".txt")
        ),
        "extract_seconds_mean": round(sum(r["seconds"] for r in reads) / max(len(reads), 1), 3),
        "chars_mean": round(sum(len(r["text"]) for r in reads) / max(len(reads), 1)),
        "misses": [
            {
                "id": r["file"].rsplit(".", 1)[0],
                "file": r["file"],
                "label": r["label"],
                "predicted": g,
                "error": r["error"],
                "text_start": r["text"][:TEXT_START],
            }
            for r, g, h in zip(reads, got, hits, strict=True)
            if not h
        ],
    }


def walkthrough(labels_of: Any, limits: Limits) -> dict[str, Any]:
    """The README's samples/files/ walk-through, each file read and classified as above."""
    truth = json.loads((WALKTHROUGH / "labels.json").read_text())
    reads = {name: read((WALKTHROUGH / name).read_bytes(), limits) for name in truth}
    predicted = labels_of([r["text"] for r in reads.values()])
    rows = [
        {"file": name, "label": truth[name], "predicted": p, "error": reads[name]["error"]}
        for name, p in zip(reads, predicted, strict=True)
    ]
    return {"right": sum(r["label"] == r["predicted"] for r in rows), "n": len(rows), "files": rows}


def print_tables(report: dict[str, Any], console: Console) -> None:
    """Accuracy per form against its target, per label, then each form's confusion."""
    labels = report["labels"]
    table = Table(title=f"{report['model']} on the blind set ({report['documents']} documents)")
    for column in ("form", "accuracy", "target", "met", "failed", "frozen", *labels):
        table.add_column(column[:8], justify="left" if column == "form" else "right")
    for name, r in report["forms"].items():
        target = r["target"]
        met = "-" if target is None else "yes" if r["accuracy"] >= target else "NO"
        table.add_row(
            name,
            f"{r['accuracy']:.3f}",
            "-" if target is None else f">= {target}",
            met,
            str(r["extraction_failed"]),
            f"{r['bytes_match_forms_sha256']}/{r['n']}",
            *(f"{r['per_label'][label]:.2f}" for label in labels),
        )
    console.print(table)
    for name, r in report["forms"].items():
        columns = list(next(iter(r["confusion"].values())))
        matrix = Table(title=f"{name}: true (rows) x predicted (columns)")
        matrix.add_column("true")
        for label in columns:
            matrix.add_column(label[:8], justify="right")
        for label in labels:
            matrix.add_row(label, *(str(r["confusion"][label][p]) for p in columns))
        console.print(matrix)
    if walk := report.get("walkthrough"):
        console.print(f"samples/files/ walk-through: {walk['right']} of {walk['n']} right")
        for row in walk["files"]:
            mark = "ok" if row["label"] == row["predicted"] else "MISS"
            console.print(f"  {mark:4} {row['file']}: {row['label']} -> {row['predicted']}")


def measure(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    """Read (or load the reads of) every document in every form, classify, score."""
    sets = (args.model,)
    if args.reads:
        reads = json.loads(args.reads.read_text())["reads"]
        reads = {form: reads[form] for form in args.forms}
    else:
        reads = read_all(sets, args.forms, args.files, args.processes, args.scan_every)
    labels_of, labels = classifier(args.repository, args.model, args.threads)
    onnx = args.repository / args.model / "1" / "model.onnx"
    report: dict[str, Any] = {
        "what": f"{args.model} accuracy on the blind evaluation set, per form (issue 38)",
        "command": " ".join(["python -m bench.accuracy_blind", *args.argv]),
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "model": args.model,
        "model_sha256": hashlib.sha256(onnx.read_bytes()).hexdigest(),
        "documents": len(items(sets)),
        "labels": labels,
        "set": "samples/eval (frozen; forms: bench.eval_forms, samples/eval/forms.sha256)",
        "scan": "300 dpi, corpus.render.scan damage seeded by the document id; "
        "PNG, JPEG, TIFF, image-only PDF in turn (PNG and JPEG: page one)",
        "git_commit": _git_commit(),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "reads_from": str(args.reads) if args.reads else "this run",
        "forms": {},
    }
    for form, got in reads.items():
        predicted = labels_of([r["text"] for r in got])
        report["forms"][form] = score(got, predicted, labels, form)
        console.print(f"{form}: {report['forms'][form]['accuracy']:.3f} on {len(got)}")
    if args.walkthrough:
        report["walkthrough"] = walkthrough(labels_of, Limits.from_settings(Settings()))
    return report


def _git_commit() -> str | None:
    from bench.accuracy_files import _git_commit as commit

    return commit()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.accuracy_blind", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--model",
        choices=("doc-type", "doc-lang"),
        default="doc-type",
        help="the model, measured on the set's documents of that name",
    )
    parser.add_argument("--forms", default=",".join(FORMS), help=f"of {', '.join(FORMS)}")
    parser.add_argument(
        "--files",
        type=Path,
        help="rendered forms (bench.eval_forms render); a file missing there is rendered in memory",
    )
    parser.add_argument("--processes", type=int, default=2, help="extraction processes")
    parser.add_argument(
        "--scan-every",
        type=int,
        default=1,
        help="scans of every Nth document only (manifest order; 5 keeps all "
        "four file formats in turn); the report gives each form's n",
    )
    parser.add_argument("--reads-out", type=Path, help="write the extracted texts and stop")
    parser.add_argument("--reads", type=Path, help="classify a --reads-out file's texts")
    parser.add_argument(
        "--walkthrough", action="store_true", help="also classify samples/files/ (doc-type)"
    )
    parser.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    parser.add_argument("--threads", type=int, default=2, help="ONNX Runtime threads")
    parser.add_argument("--out", type=Path, help="where the raw JSON goes")
    args = parser.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    args.forms = tuple(f for f in args.forms.split(",") if f)
    if unknown := set(args.forms) - set(FORMS):
        parser.error(f"unknown forms {sorted(unknown)}; choose from {FORMS}")
    console = Console()
    if args.reads_out:
        reads = read_all((args.model,), args.forms, args.files, args.processes, args.scan_every)
        args.reads_out.write_text(json.dumps({"model": args.model, "reads": reads}) + "\n")
        console.print(f"reads: {args.reads_out}")
        return
    if args.out is None:
        parser.error("--out is required (or --reads-out)")
    report = measure(args, console)
    print_tables(report, console)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"raw JSON: {args.out}")


if __name__ == "__main__":
    main()
