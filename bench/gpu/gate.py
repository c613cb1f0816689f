"""The parity gate over every path the served torch-gpu runtime has (bench/gpu/parity.py).

The reference (the FP32 checkpoint, on the GPU, TF32 off) runs once per model, in batches
of REFERENCE_BATCH windows; each served request size is a gate of its own: the same
batches cut into requests of that many windows, each trimmed to its longest window as a
worker's request is, sent to the running Triton one at a time (or `SIZExN`: N at once).
`docq validate`'s comparison (conversion.parity.compare) decides each one.

`mark` sets a published result beside the gate that checked it: a serve or pipeline JSON
whose tree is another commit than the gate's says so in its `gate` field.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

N, SEED = 10000, 4004  # the documents each model is gated on: conversion.parity.synthetic's
REFERENCE_BATCH = 128  # windows per reference call (FP32 on the GPU: fast, same logits)
# what a gate's row keeps of its conversion.parity report
SHOWN = ("passed", "agreement", "accuracy_diff_pt", "max_abs_logit_diff", "documents", "windows")


def parse_size(text: str) -> tuple[int, int]:
    """`8` -> (8, 1); `128x4` -> (128, 4): windows per request, requests in flight."""
    size, _, in_flight = text.partition("x")
    return int(size), int(in_flight or 1)


def chunked(url: str, model: str, size: int, in_flight: int) -> Any:
    """A runner that sends a batch as requests of `size` windows, `in_flight` at a time,
    and joins their logits in order."""
    from conversion.parity import triton_runner

    local = threading.local()

    def send(part: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        if not hasattr(local, "run"):  # one gRPC client per thread
            local.run = triton_runner(url, model)
        ids, mask = part
        width = max(1, int(mask.sum(axis=1).max()))  # a worker's request: its longest window
        return np.asarray(local.run((ids[:, :width], mask[:, :width])))

    pool = ThreadPoolExecutor(in_flight)

    def run(batch: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        ids, mask = batch
        parts = [(ids[s : s + size], mask[s : s + size]) for s in range(0, len(ids), size)]
        return np.concatenate(list(pool.map(send, parts)))

    return run


def gate_model(
    run: Any,
    name: str,
    checkpoint: Path,
    url: str,
    variants: list[str],
    deadline: float,
    out: dict[str, Any],
    save: Any,
) -> dict[str, Any]:
    """Every batch size of `run.batch_sizes` for each served variant of model `name`, into
    `out` (`save()` after each: a call cut short keeps what it gated); the reports beside
    `run.out`; a size not started before `deadline` is listed as skipped."""
    import torch

    from conversion import parity
    from conversion.checkpoint import load_checkpoint
    from docq.text.tokenizing import load_tokenizer

    torch.backends.cuda.matmul.allow_tf32 = False
    model, labels = load_checkpoint(checkpoint)
    tokenizer = load_tokenizer(checkpoint)
    docs = parity.synthetic(name, run.n, SEED)
    reference = parity.cached(parity.candidate(run.reference, model, run.threads))
    windowing = parity.Windowing(512, 64, "mean", REFERENCE_BATCH)
    for text in run.batch_sizes.split(","):
        size, in_flight = parse_size(text)
        for variant in variants:
            served = f"{name}-{variant}"
            if time.monotonic() > deadline:
                out["skipped"].append(f"{served} at {text}: the gate's budget ran out")
                continue
            t = time.perf_counter()
            report = parity.compare(
                reference,
                chunked(url, served, size, in_flight),
                docs,
                labels,
                tokenizer,
                names=(f"{run.reference} ({checkpoint.name})", f"{served} @ {text}"),
                windowing=windowing,
                source=f"synthetic {name} corpus, seed {SEED}",
            )
            report.write(run.out / f"{served}-{run.n}-b{text}")
            row = {"variant": variant, "batch": text} | {k: getattr(report, k) for k in SHOWN}
            row["seconds"] = round(time.perf_counter() - t, 1)
            out["runs"].append(row)
            save()
            print(f"{'PASS' if report.passed else 'FAIL'} {name} {row}", flush=True)
    return out


def commit_of(tree: str) -> str:
    """The commit a tree note (bench.gpu.report.tree_note) names, with '+changes' when files
    differed from it."""
    lines = tree.strip().splitlines()
    head = lines[0].split()[-1] if lines and lines[0].startswith("HEAD") else "unknown"
    return head + ("+changes" if any(line.strip() for line in lines[2:]) else "")


def mark(gate_path: Path, results: list[Path]) -> list[str]:
    """Write into each result JSON which gate checked it and whether at its own commit."""
    gate = json.loads(gate_path.read_text())
    lines = []
    for path in results:
        result = json.loads(path.read_text())
        here, gated = commit_of(result.get("tree", "")), commit_of(gate.get("tree", ""))
        same = here == gated and "unknown" not in here
        result["gate"] = {
            "gate": str(gate_path),
            "gate_commit": gated,
            "passed": gate.get("passed"),
            "same_commit": same,
            "note": "gated at this commit"
            if same
            else f"MARKED: the gate ran at {gated}, this run at {here}",
        }
        path.write_text(json.dumps(result, indent=1) + "\n")
        lines.append(f"{path}: {result['gate']['note']} (gate passed: {gate.get('passed')})")
    return lines
