"""A published model's accuracy on labelled documents in each form users send.

The forms: text, a PDF with a text layer, a DOCX, a scan at 300 dpi. The sets: the blind
evaluation set (samples/eval/, issue 38; doc-type on its doc-type documents, doc-lang on
its doc-lang ones), or doc-type documents in the generator's unseen templates (issue 21).

Each document is rendered in each form (bench.eval_forms), read back through the workers'
own extraction (`docq.extract` on the type it sniffs, as the API does: OCR for scans),
then classified as docq serves it: the model's tokenizer, windows and aggregation on the
published model_repository/<model>/1/model.onnx through ONNX Runtime on the CPU. The
table gives accuracy per form and label; the JSON adds each confusion and every miss.

    python -m bench.accuracy --set blind --model doc-type --walkthrough --out FILE
    python -m bench.accuracy --set unseen --n 120 --seed 8448 --forms text,pdf,scan --out FILE
    python -m bench.accuracy --render DIR   write the blind set's forms, check forms.sha256
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.eval_forms import FORMS, HASHES, Item, frozen, items, render, render_all, sha256, unseen
from bench.report import console, table, write_json
from conversion.evaluate import Accuracy
from corpus.render.files import pool_map
from docq.config import REPO_ROOT, Settings
from docq.errors import ExtractionFailed
from docq.extract import Limits, extract, sniff

TARGETS = {
    "blind": {"text": 0.97, "pdf": 0.97, "docx": 0.97, "scan": 0.93},  # issue 38
    "unseen": {"text": 0.95, "pdf": 0.95, "scan": 0.90},  # issue 21
}
WALKTHROUGH = REPO_ROOT / "samples" / "files"
TEXT_START = 200
FAILED = "(extraction failed)"
Read = dict[str, Any]  # one file as read back (read()'s keys), kept as JSON


def read(data: bytes, limits: Limits, file: str, label: str, same: bool | None = None) -> Read:
    """What extraction gives back for `data` (the file `file`, labelled `label`): its type,
    text, time and any error; `same` (kept as `frozen`): whether a blind rendering's bytes
    are those of forms.sha256 (None for files that are not frozen)."""
    start = time.perf_counter()
    kind = sniff(data) or "text/plain"
    try:
        text, error = extract(data, kind, limits).text, None
    except ExtractionFailed as e:
        text, error = "", f"{e.code}: {e}"
    seconds = round(time.perf_counter() - start, 3)
    return {"file": file, "label": label, "frozen": same, "type": kind, "text": text,
            "error": error, "seconds": seconds}  # fmt: skip


def read_item(item: Item, form: str, limits: Limits, digests: dict[str, str]) -> Read:
    """One document rendered in `form` and read."""
    data = render(item, form)
    same = form == "text" or digests.get(item.name(form)) == sha256(data)
    return read(data, limits, item.name(form), item.label, None if item.generated else same)


def read_all(chosen: list[Item], forms: tuple[str, ...], processes: int) -> dict[str, list[Read]]:
    """{form: reads in set order} of every document of `chosen` in every form."""
    # One OCR thread a process: the processes already fill the cores.
    limits = replace(Limits.from_settings(Settings()), ocr_threads=1)
    digests = frozen()
    out: dict[str, list[Read]] = {}
    for form in forms:
        start = time.perf_counter()
        out[form] = pool_map(read_item, [(i, form, limits, digests) for i in chosen], processes)
        print(f"read {len(chosen)} {form} in {time.perf_counter() - start:.0f} s", flush=True)
    return out


def classifier(repository: Path, model: str, threads: int = 2) -> tuple[Any, list[str]]:
    """(classify(texts) -> labels, labels) for the published model, as the workers run it."""
    from conversion import pbtxt
    from conversion.evaluate import classify
    from conversion.runners import onnx_runner
    from docq.text.aggregation import Aggregation
    from docq.text.tokenizing import load_tokenizer, window_spec
    from docq.text.tokens import windows_of

    spec = pbtxt.served_spec(pbtxt.read(repository / model / "config.pbtxt"), repository)
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
    reads: list[Read], predicted: list[str], labels: list[str], target: float | None
) -> dict[str, Any]:
    """One form's figures: accuracy (conversion.evaluate's, as the demo models' own
    evaluation counts it), per label, confusion, and every miss."""
    truth = [r["label"] for r in reads]
    got = [FAILED if r["error"] else p for r, p in zip(reads, predicted, strict=True)]
    measured = Accuracy.of(got, truth, labels)
    same = [r["frozen"] for r in reads]
    return {
        "n": measured.n,
        "accuracy": round(measured.accuracy, 4),
        "target": target,
        "per_label": {label: round(share, 4) for label, share in measured.per_class.items()},
        "support": measured.support,
        "confusion": confusion(truth, got, labels),
        "extraction_failed": sum(1 for r in reads if r["error"]),
        "bytes_match_forms_sha256": None if None in same else sum(same),
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
            for r, g in zip(reads, got, strict=True)
            if g != r["label"]
        ],
    }


def walkthrough(labels_of: Any, labels: list[str], limits: Limits) -> dict[str, Any]:
    """The README's samples/files/ walk-through, each file read and classified as above."""
    truth = json.loads((WALKTHROUGH / "labels.json").read_text())
    reads = [read((WALKTHROUGH / f).read_bytes(), limits, f, label) for f, label in truth.items()]
    return score(reads, labels_of([r["text"] for r in reads]), labels, None)


def print_tables(report: dict[str, Any]) -> None:
    """Accuracy per form (and of the walk-through's files) against its target and per label."""
    labels = report["labels"]
    columns = ("form", "accuracy", "target", "met", "failed", "frozen", "s/doc", *labels)
    rows = {**report["forms"], **({"samples/files": w} if (w := report.get("walkthrough")) else {})}
    table(
        f"{report['model']} on the {report['set']} set ({report['documents']} documents)",
        [column[:8] for column in columns],
        [
            [
                name,
                f"{r['accuracy']:.3f}",
                "-" if r["target"] is None else f">= {r['target']}",
                "-" if r["target"] is None else "yes" if r["accuracy"] >= r["target"] else "NO",
                r["extraction_failed"],
                "-" if (same := r["bytes_match_forms_sha256"]) is None else f"{same}/{r['n']}",
                f"{r['extract_seconds_mean']:.2f}",
                *(f"{r['per_label'][label]:.2f}" for label in labels),
            ]
            for name, r in rows.items()
        ],
    )


def _run(command: list[str]) -> str | None:
    """The first line `command` prints (None where it cannot run): what was measured."""
    if shutil.which(command[0]) is None:
        return None
    out = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    return next(iter((out.stdout or out.stderr).splitlines()), None)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Read every document in every form (of each `--every`th only: where the core-seconds
    of OCR, about one a page, are not there to spend), classify, score."""
    every = items((args.model,)) if args.set == "blind" else unseen(args.n, args.seed)
    chosen = [i for i in every if i.index % args.every == 0]
    reads = read_all(chosen, args.forms, args.processes)
    labels_of, labels = classifier(args.repository, args.model)
    onnx = args.repository / args.model / "1" / "model.onnx"
    report: dict[str, Any] = {
        "what": f"{args.model} accuracy on the {args.set} set, per form (issues 38 and 21)",
        "command": " ".join(["python -m bench.accuracy", *args.argv]),
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "model": args.model,
        "model_sha256": sha256(onnx.read_bytes()),
        "set": args.set,
        "documents": len(chosen),
        "labels": labels,
        "tesseract": _run(["tesseract", "--version"]),
        "git_commit": _run(["git", "rev-parse", "HEAD"]),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "forms": {},
    }
    for form, got in reads.items():
        predicted = labels_of([r["text"] for r in got])
        target = TARGETS[args.set].get(form)
        report["forms"][form] = score(got, predicted, labels, target)
        console.print(f"{form}: {report['forms'][form]['accuracy']:.3f} on {len(got)}")
    if args.walkthrough:
        report["walkthrough"] = walkthrough(labels_of, labels, Limits.from_settings(Settings()))
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--set", choices=("blind", "unseen"), default="blind",
                        help="samples/eval/, or the generator's unseen templates")  # fmt: skip
    parser.add_argument("--model", choices=("doc-type", "doc-lang"), default="doc-type",
                        help="the model; on the blind set, its documents of that name")  # fmt: skip
    parser.add_argument("--n", type=int, default=60, help="unseen: documents (labels balanced)")
    parser.add_argument("--seed", type=int, default=2112, help="unseen: the generator's seed")
    parser.add_argument("--forms", default=",".join(FORMS), help=f"of {', '.join(FORMS)}")
    parser.add_argument("--every", type=int, default=1,
                        help="every Nth document only (set order; 5 keeps the scans' four file "
                        "formats in turn); the report gives each form's n")  # fmt: skip
    parser.add_argument("--walkthrough", action="store_true",
                        help="also classify samples/files/ (doc-type)")  # fmt: skip
    parser.add_argument("--processes", type=int, default=2, help="extraction processes")
    parser.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    parser.add_argument("--out", type=Path, help="where the raw JSON goes")
    parser.add_argument("--render", type=Path, metavar="DIR",
                        help="only write the blind set's forms under DIR, checked")  # fmt: skip
    args = parser.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    args.forms = tuple(f for f in args.forms.split(",") if f)
    if unknown := set(args.forms) - set(FORMS):
        parser.error(f"unknown forms {sorted(unknown)}; choose from {FORMS}")
    if args.set == "unseen" and args.model != "doc-type":
        parser.error("the unseen templates are doc-type's documents")
    if args.render:
        digests = render_all(args.render, args.processes)
        wrong = [name for name, digest in frozen().items() if digests.get(name) != digest]
        console.print(f"{len(digests)} files in {args.render}; {len(wrong)} differ from "
                      f"{HASHES}: {wrong[:5]}")  # fmt: skip
        raise SystemExit(1 if wrong else 0)
    if args.out is None:
        parser.error("--out is required (or --render)")
    report = measure(args)
    print_tables(report)
    write_json(args.out, report)
    console.print(f"raw JSON: {args.out}")


if __name__ == "__main__":
    main()
