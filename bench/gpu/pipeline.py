"""The whole docq pipeline on one GPU host, against the old architecture on the same GPU.

It starts what `make up` starts, on free ports (bench.stack), serving a RoBERTa-large-shaped
`torch-gpu` classifier (random weights, FP16: model.py), with `--workers` bulk workers. Then
(a phase is skipped once `--budget-s` would be overrun; the JSON is rewritten after each):
1. docq: one upload of `--docs` documents of the bench's corpus, timed to `succeeded`, with
   3-document jobs meanwhile; docs/s, windows/s, GPU utilisation, CPU per tier;
2. the ceiling: Triton alone on the same windows, as the CPU bench measures it
   (`pipeline_efficiency`);
3. one client uploading the `--long-documents` longest documents in one request;
4. the old architecture in FP16 and FP32 (bench.baseline.sweep), each swept over its worker
   counts on `--baseline-documents` documents spread over the corpus, and the same long
   upload; `--skip baseline` leaves it out.
Prints the tables (bench.report) and writes `--out`; docs/performance.md has the commands.

    # on the GPU host (devstack/carry/remote.sh), and a rehearsal on a CPU machine:
    source devstack/carry/remote.sh && python3 -m bench.gpu.pipeline --out $OUT/pipeline.json
    nice -n 10 .venv/bin/python -m bench.gpu.pipeline --tiny --out /tmp/pipeline.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.baseline.sweep import run_baseline_gpu, sample
from bench.docq_jobs import run_docq, run_triton_alone, upload_long
from bench.documents import generate_parallel, longest, window_counts
from bench.gpu.measure import Budget, GpuSampler, gpu_name, stats_delta, tiers, triton_stats
from bench.gpu.model import MODEL, Variant, build_model
from bench.gpu.report import tree_note
from bench.pipeline import SEED, SHARD_SIZE  # the CPU bench's corpus seed and shards
from bench.report import console, show_gpu, summarise_gpu, write_json
from bench.stack import Stack
from corpus.doc_type import generate

# --- the run ------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; `--tiny` (a CPU rehearsal) gives the others their smaller defaults."""
    tiny = "--tiny" in (sys.argv[1:] if argv is None else argv)
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    ap.add_argument("--tiny", action="store_true", help="CPU rehearsal: 2-layer model, few docs")
    ap.add_argument("--docs", type=int, default=300 if tiny else 20_000, help="in the bulk job")
    ap.add_argument("--workers", type=int, default=2 if tiny else 12, help="bulk workers")
    ap.add_argument(
        "--model", type=Variant.parse, default=Variant(MODEL),
        help="the served model's converter overrides, as serve's variants: NAME:gelu=tanh",
    )  # fmt: skip
    long, docs = (40, 40) if tiny else (1000, 1000)
    ap.add_argument("--long-documents", type=int, default=long, help="in one request")
    workers, fp16 = ([1, 2], [1, 2]) if tiny else ([1, 2, 4, 8], [1, 2, 4, 8, 12])
    ap.add_argument("--baseline-workers", type=ints, default=workers, help="old architecture, FP32")
    ap.add_argument(
        "--baseline-workers-fp16", type=ints, default=fp16, help="old architecture, FP16"
    )
    ap.add_argument("--baseline-documents", type=int, default=docs, help="old architecture")
    ap.add_argument("--skip", action="append", default=[], choices=["baseline"])
    ap.add_argument("--budget-s", type=float, default=540, help="stop starting phases after")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    budget = Budget(args.budget_s)
    import torch

    on_gpu = torch.cuda.is_available()
    work = Path(tempfile.mkdtemp(prefix="docq-gpu-pipeline-"))
    r: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python3 -m bench.gpu.pipeline " + " ".join(argv or sys.argv[1:]),
        "gpu": gpu_name(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "tree": tree_note(),
        "settings": {
            k: str(v) if isinstance(v, Path) else vars(v) if isinstance(v, Variant) else v
            for k, v in vars(args).items()
        },
        "skipped": budget.skipped,
        "errors": [],
    }

    def save() -> None:
        r["summary"] = summarise_gpu(r)
        write_json(args.out, r)

    def phase(name: str, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        """Run one phase; on an error or past `timeout` (a job that never ends: run_docq
        waits for ever) record it and go on with the next (the thread is left behind)."""
        t = time.monotonic()
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn()
            except Exception as exc:  # the next phases still run; the JSON says what broke
                box["error"] = exc
                box["trace"] = traceback.format_exc()[-3000:]

        worker = threading.Thread(target=run, name=f"phase {name}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            box["error"] = TimeoutError(f"{name} still running after {timeout:.0f} s")
            box["trace"] = repr(box["error"])
        if "error" in box:
            console.print(f"[red]{name} failed: {box['error']!r}[/]")
            r["errors"].append({"phase": name, "error": box["trace"]})
        value = box.get("value")
        r.setdefault("phase_s", {})[name] = round(time.monotonic() - t, 1)
        save()
        return value

    console.print(f"[bold]docq GPU pipeline[/]: {r['gpu']}, work in {work}")
    with ProcessPoolExecutor(1) as corpus_pool:
        # The corpus is written by other processes while the model is built.
        docs_future = corpus_pool.submit(
            generate_parallel, args.docs, SEED, max(1, (os.cpu_count() or 2) - 2)
        )
        t = time.monotonic()
        repo, checkpoint, r["model"] = build_model(work, args.tiny, on_gpu, args.model.overrides)
        r["model"]["build_s"] = round(time.monotonic() - t, 1)
        docs = docs_future.result()
    small = [d for d in generate(300, SEED + 1) if len(d.text) < 1500]
    counts = window_counts(docs, repo / MODEL / "tokenizer")  # the served model's
    long_picked = longest(docs, counts, args.long_documents)
    long_docs = [docs[i] for i in long_picked]
    r["corpus"] = {
        "documents": len(docs),
        "windows": sum(counts),
        "windows_per_doc": round(sum(counts) / len(docs), 3),
        "mean_chars": round(sum(len(d.text) for d in docs) / len(docs)),
        "long_upload_windows": sum(counts[i] for i in long_picked),
        "ready_after_s": round(args.budget_s - budget.left(), 1),
    }
    console.print(f"corpus and model ready: {r['corpus']}, model {r['model']['build_s']} s")
    sampler = GpuSampler()
    sampler.start()
    try:
        with Stack(repo, work, SHARD_SIZE, args.workers, model=MODEL, triton_nice=None) as stack:
            r["stack_ready_after_s"] = round(args.budget_s - budget.left(), 1)
            console.print(
                f"stack up with {stack.bulk_workers} bulk workers: {r['stack_ready_after_s']} s"
            )
            warm = docs[-min(len(docs), 2 * SHARD_SIZE * stack.bulk_workers) :]
            phase("warm-up", lambda: run_docq(stack, warm), timeout=90)

            def bulk() -> dict[str, Any]:
                """run_docq, with small jobs, GPU samples, windows/s and CPU per tier."""
                before = triton_stats(stack.triton_url, MODEL)
                t0 = time.monotonic()
                out = run_docq(stack, docs, small)
                t1 = time.monotonic()
                out["triton"] = stats_delta(before, triton_stats(stack.triton_url, MODEL))
                out["workers"], out["windows"] = stack.bulk_workers, sum(counts)
                out["windows_per_s"] = round(sum(counts) / out["elapsed_s"], 1)
                out["gpu"] = sampler.window(t0, t1)
                out["cpu_s"] = out["cpu_s"] | {"tiers": tiers(out["cpu_s"])}
                worker_s = out["cpu_s"]["tiers"].get("bulk workers", 0.0)
                out["worker_cpu_ms_per_doc"] = round(1000 * worker_s / len(docs), 2)
                out["worker_cores_busy"] = round(worker_s / out["elapsed_s"], 2)
                console.print(f"docq: {out['docs_per_s']} docs/s, {out['windows_per_s']} windows/s")
                return out

            r["docq"] = phase("docq", bulk, timeout=max(240.0, len(docs) / 50)) or {}

            def ceiling() -> dict[str, Any]:
                before = triton_stats(stack.triton_url, MODEL)
                out = run_triton_alone(stack, docs, MODEL)
                end = time.monotonic()  # its clock runs from the first request to the last
                out["triton"] = stats_delta(before, triton_stats(stack.triton_url, MODEL))
                out["gpu"] = sampler.window(end - out["elapsed_s"], end)
                console.print(f"Triton alone: {out['docs_per_s']} docs/s")
                return out

            if budget.allows(30 + 1.5 * r["docq"].get("elapsed_s", 30), "ceiling"):
                r["ceiling"] = phase("ceiling", ceiling, timeout=180) or {}
                r["padding"] = r["ceiling"].get("padding", {})
            r["long_upload"] = {}
            if budget.allows(30, "long upload to docq"):
                r["long_upload"]["docq"] = phase(
                    "long upload, docq",
                    lambda: upload_long(stack, long_docs),
                    timeout=120,
                )
                console.print(f"docq long upload: {r['long_upload']['docq']}")
            if "baseline" not in args.skip:
                os.environ["BASELINE_CHECKPOINT"] = str(checkpoint)  # read by bench/baseline/app.py
                os.environ["BASELINE_DEVICE"] = "cuda" if on_gpu else "cpu"
                picked = sample(docs, args.baseline_documents)  # the corpus's mix
                base_docs, windows = [docs[i] for i in picked], sum(counts[i] for i in picked)

                workers = {"fp16": args.baseline_workers_fp16, "fp32": args.baseline_workers}

                def baseline() -> dict[str, Any]:
                    out = run_baseline_gpu(
                        base_docs, windows, long_docs, workers, work, sampler, budget
                    )
                    r["long_upload"]["baseline"] = out.pop("long_upload", {})
                    return out

                r["baseline"] = phase("baseline", baseline) or {}
    finally:
        sampler.stop()
        save()
    show_gpu(r)
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
