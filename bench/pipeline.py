"""`make bench`: docq against the old architecture, side by side, in one run on this machine.

1. baseline: the old architecture (bench/baseline/app.py: Gunicorn + Uvicorn workers, the
   PyTorch FP32 model in each worker, one synchronous request per document), tuned: each
   worker runs cores / workers torch threads, and a sweep over the worker counts
   (`--baseline-workers`, 1, 2 and 4 by default, with `--baseline-clients-per-worker`
   clients each) keeps the best; the best then classifies every document of the corpus;
2. docq: one bulk upload of the same corpus through the API, Celery workers and a real
   Triton, until the job succeeds;
3. the ceiling: Triton alone gets the same windows packed by docq's packer with the model's
   batch size and token budget, sorted over the whole corpus (never more padding than
   docq's batcher sends), tokenized before the clock starts, with `--ceiling-in-flight`
   requests outstanding. pipeline_efficiency = docq / ceiling; it can exceed 1 only if docq
   computed fewer tokens, which `work_ratio` shows;
4. latency probes while bulk jobs run: `--accept-uploads` 1,000-document uploads
   (acceptance latency, each cancelled at once) and 3-document jobs (upload to result).

`--cores N` runs the whole bench (every process it starts) on the first N cores of this
machine, so that the same command measures a 2-core box on a 16-core one; the baseline's
threads follow it. Prints a table and writes `--out` (bench/results/pipeline.json, ignored
by git: a rehearsal stays there; a run docs/performance.md quotes is written to bench/runs/).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.baseline.sweep import run_baseline
from bench.ceiling import ceiling_batches, run_triton_alone
from bench.corpus import padding_report, repository_spec, windows_of
from bench.docq_jobs import run_docq, run_probes
from bench.measure import RESULTS, profile_summary
from bench.procs import use_cores
from bench.report import console, print_table, summarise
from bench.stack import Stack
from corpus.doc_type import generate
from docq.config import REPO_ROOT


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--model", default="doc-type")
    ap.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    ap.add_argument("--shard-size", type=int, default=64)
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
    ap.add_argument("--baseline-clients-per-worker", type=int, default=4)
    ap.add_argument(
        "--baseline-sweep-documents",
        type=int,
        default=300,
        help="documents per sweep point (0: all); the best then runs every document",
    )
    ap.add_argument("--docq-workers", type=int, default=1, help="bulk Celery worker processes")
    ap.add_argument(
        "--ceiling-in-flight", type=int, default=0, help="0: twice what the workers keep"
    )
    ap.add_argument("--probe-documents", type=int, default=400)
    ap.add_argument("--accept-uploads", type=int, default=200)
    ap.add_argument("--accept-every", type=float, default=0.5)
    ap.add_argument("--small-every", type=float, default=2.0)
    ap.add_argument(
        "--skip", action="append", default=[], choices=["baseline", "probes"], help="leave out"
    )
    ap.add_argument(
        "--padding-only",
        action="store_true",
        help="only what each side computes for the corpus (seconds, no services)",
    )
    ap.add_argument(
        "--profile", type=float, default=0, help="py-spy the bulk worker and Triton for N s"
    )
    ap.add_argument(
        "--table", type=Path, metavar="JSON", help="print the table of a saved run, run nothing"
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "pipeline.json")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.table:
        print_table(json.loads(args.table.read_text()))
        return
    cores = use_cores(args.cores)
    docs = generate(args.documents, args.seed)
    if args.padding_only:
        spec = repository_spec(args.repository, args.model)
        windows = windows_of(docs, spec)
        report = {
            "command": "python -m bench.pipeline " + " ".join(sys.argv[1:]),
            "documents": len(docs),
            "seed": args.seed,
            "model": args.model,
            "max_batch_size": spec.max_batch_size,
            "token_budget": spec.budget,
        } | padding_report(windows, ceiling_batches(windows, spec))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        console.print(report)
        return
    small = [d for d in generate(300, args.seed + 1) if len(d.text) < 1500]
    workdir = Path(tempfile.mkdtemp(prefix="docq-bench-"))
    started = time.perf_counter()
    console.print(
        f"[bold]docq bench[/]: {len(docs)} documents (seed {args.seed}) on cores {cores}, "
        f"logs in {workdir}"
    )
    baseline: dict[str, Any] = {}
    if "baseline" not in args.skip:
        console.print(f"1/4 baseline: sweep over {args.baseline_workers} workers")
        baseline = run_baseline(docs, args, workdir)
        console.print(f"    {baseline}")
    probes: dict[str, Any] = {}
    with Stack(args.repository, workdir, args.shard_size, args.docq_workers) as stack:
        console.print("2/4 docq: bulk upload of the corpus until it succeeds")
        docq = run_docq(stack, docs, args.profile)
        console.print(f"    {docq}")
        console.print("3/4 ceiling: the same windows, packed, straight to Triton")
        alone = run_triton_alone(stack, docs, args.model, args.ceiling_in_flight or None)
        console.print(f"    {alone}")
        if "probes" not in args.skip:
            console.print(
                f"4/4 latency: {args.accept_uploads} uploads during "
                f"{args.probe_documents}-document bulk jobs"
            )
            probes = run_probes(stack, docs[: args.probe_documents], small, args)
            console.print(f"    acceptance: {probes['accept_ms'] | {'samples': '...'}}")
    summary = summarise(args, docs, baseline, docq, alone, probes)
    summary["bench_seconds"] = round(time.perf_counter() - started, 1)
    summary["machine"] = {"cpus": os.cpu_count(), "cores_used": cores}
    summary["profiles"] = {
        p.stem: profile_summary(p)
        for p in sorted(RESULTS.glob("profile-*.txt"))
        if args.profile and p.stat().st_size
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    print_table(summary)


if __name__ == "__main__":
    main()
