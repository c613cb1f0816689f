"""`make bench`: docq against the old architecture, side by side, in one run on this machine.

1. baseline: the old architecture (bench/baseline/: Gunicorn workers, each with the PyTorch
   FP32 model and cores / workers torch threads, one request per document), swept over
   `--baseline-workers` on the first 300 documents; the best then classifies every one;
2. docq: one bulk upload of the same corpus through the API, Celery workers and Triton;
3. the ceiling: Triton alone on the same windows (bench.docq_jobs.run_triton_alone);
   pipeline_efficiency = docq / ceiling, with the work each computed (`work_ratio`);
4. latency probes while bulk jobs run: 1,000-document uploads and 3-document jobs.

`--cores N` runs every process it starts on this machine's first N cores. Prints a table and
writes `--out` (bench/results/, ignored by git; a run the docs quote goes to bench/runs/).
How each side is measured, and the figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline.sweep import run_baseline
from bench.docq_jobs import run_docq, run_probes, run_triton_alone
from bench.procs import use_cores
from bench.report import console, print_table, summarise, write_json
from bench.stack import Stack
from corpus.doc_type import generate
from docq.config import REPO_ROOT

SEED = 777  # the corpus: 2,000 documents of it are 4,086 windows
MODEL = "doc-type"  # the demo model, as `make model` publishes it
SHARD_SIZE = 64
PROBE_DOCUMENTS = 400  # the bulk jobs the latency probes run beside


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=2000)
    ap.add_argument(
        "--cores",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="run every process on this machine's first N cores (default: all)",
    )
    ap.add_argument(
        "--baseline-workers",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1, 2, 4],
        help="Gunicorn worker counts to sweep, e.g. 1,2,4 (threads: cores / workers)",
    )
    ap.add_argument("--docq-workers", type=int, default=1, help="bulk Celery worker processes")
    ap.add_argument(
        "--table", type=Path, metavar="JSON", help="print the table of a saved run, run nothing"
    )
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "pipeline.json")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.table:
        print_table(json.loads(args.table.read_text()))
        return
    cores = use_cores(args.cores)
    docs = generate(args.documents, SEED)
    small = [d for d in generate(300, SEED + 1) if len(d.text) < 1500]
    workdir = Path(tempfile.mkdtemp(prefix="docq-bench-"))
    started = time.perf_counter()
    console.print(
        f"[bold]docq bench[/]: {len(docs)} documents (seed {SEED}) on cores {cores}, "
        f"logs in {workdir}"
    )
    console.print(f"1/4 baseline: sweep over {args.baseline_workers} workers")
    baseline = run_baseline(docs, args.cores, args.baseline_workers, workdir)
    console.print(f"    {baseline}")
    repository = REPO_ROOT / "model_repository"
    with Stack(repository, workdir, SHARD_SIZE, args.docq_workers) as stack:
        console.print("2/4 docq: bulk upload of the corpus until it succeeds")
        docq = run_docq(stack, docs)
        console.print(f"    {docq}")
        console.print("3/4 ceiling: the same windows, packed, straight to Triton")
        alone = run_triton_alone(stack, docs, MODEL)
        console.print(f"    {alone}")
        console.print(f"4/4 latency: uploads during {PROBE_DOCUMENTS}-document bulk jobs")
        probes = run_probes(stack, docs[:PROBE_DOCUMENTS], small)
        console.print(f"    acceptance: {probes['accept_ms'] | {'samples': '...'}}")
    summary = {
        "command": "python -m bench.pipeline " + " ".join(sys.argv[1:]),
        "documents": len(docs),
        "seed": SEED,
        **summarise(len(docs), baseline, docq, probes, alone),
        "bench_seconds": round(time.perf_counter() - started, 1),
        "machine": {"cpus": os.cpu_count(), "cores_used": cores},
    }
    write_json(args.out, summary)
    console.print(f"wrote {args.out}")
    print_table(summary)


if __name__ == "__main__":
    main()
