"""CPU runtimes side by side, in-process: the same packed windows, the same threads.

Each variant is a model version folder as `docq convert` stages it, run through its
runtime's own model code (serving/runtimes/*.py, loaded through serving/pb_stub.py as
Triton's stub would run it), plus PyTorch FP32 eager, the old architecture's runtime. Every
round runs every variant once over the same batches (the corpus's windows packed by
`docq.text.packing` with the served batch size and token budget), in an order rotated from
round to round, so that a neighbour's load on a shared CPU falls on all of them alike.

    nice -n 10 .venv/bin/python -m bench.cpu_runtimes --documents 60 --rounds 5 \\
        --variant onnx-cpu=model_repository/doc-type/1 \\
        --variant onnx-cpu-fused=build/convert-fused/doc-type/version \\
        --variant openvino-fp32=build/convert-openvino/doc-type/version \\
        --out bench/cpu-runtimes.json

A variant is NAME=FOLDER[:PRECISION]; its runtime is read from the folder (model.xml:
openvino-cpu, model.onnx: onnx-cpu). Prints windows/s per variant and writes every round.
`--summarise REPORT...` pools the rounds of written reports into same-round speed ratios
against the served `onnx-cpu`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from corpus.doc_type import generate
from docq.config import REPO_ROOT
from docq.text.packing import Batch, pack
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import split_all

Run = Callable[[np.ndarray, np.ndarray], np.ndarray]


def served(folder: Path, precision: str, threads: int) -> Run:
    """The runtime's own model code serving `folder`, in-process."""
    from serving import pb_stub
    from serving.runtimes import SOURCES

    runtime = "openvino_cpu" if (folder / "model.xml").exists() else "onnx_cpu"
    model = pb_stub.instance(
        pb_stub.load_runtime(SOURCES / f"{runtime}.py"),
        folder,
        "CPU",
        8,
        precision=precision,
        intra_op_threads=str(threads),
    )
    return model._run  # type: ignore[no-any-return]


def torch_eager(checkpoint: Path, threads: int) -> Run:
    """PyTorch FP32 eager, as the old architecture's workers run the model."""
    import torch

    from conversion.checkpoint import load_checkpoint

    torch.set_num_threads(threads)
    model, _ = load_checkpoint(checkpoint)

    @torch.inference_mode()
    def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
        return out.logits.numpy()

    return run


def batches_of(documents: int, seed: int, tokenizer: Path, max_batch: int) -> list[Batch]:
    """The corpus's windows (512 tokens, stride 64), packed as the workers pack them."""
    tok = load_tokenizer(tokenizer)
    docs = generate(documents, seed)
    windows = split_all(tokenize(tok, [d.text for d in docs]), window_spec(tok, 512, 64))
    return pack(windows, max_batch, token_budget=max_batch * 512)


def measure(variants: dict[str, Run], batches: list[Batch], rounds: int) -> dict[str, list[float]]:
    """Seconds per round for each variant, the variants' order rotated each round."""
    names = list(variants)
    for name in names:  # warm-up: first calls allocate and pick kernels
        variants[name](batches[0].input_ids, batches[0].attention_mask)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            for b in batches:
                variants[name](b.input_ids, b.attention_mask)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def agreement(variants: dict[str, Run], batches: list[Batch], reference: str) -> dict[str, float]:
    """Largest |logit diff| of each variant against `reference` on the first batches."""
    out = {}
    for name, run in variants.items():
        worst = 0.0
        for b in batches[:4]:
            expected = variants[reference](b.input_ids, b.attention_mask)
            worst = max(worst, float(np.abs(run(b.input_ids, b.attention_mask) - expected).max()))
        out[name] = worst
    return out


def summarise(reports: list[dict[str, Any]], served: str = "onnx-cpu") -> dict[str, Any]:
    """Each variant's speed against the served default, round by round: on a shared CPU
    the load changes between rounds far more than between the variants of one round, so
    a same-round ratio is steadier than a ratio of medians. Pools the rounds of every
    report given."""
    ratios: dict[str, list[float]] = {}
    for report in reports:
        base = report["variants"][served]["seconds_per_round"]
        for name, row in report["variants"].items():
            ratios.setdefault(name, []).extend(
                b / s for b, s in zip(base, row["seconds_per_round"], strict=True)
            )
    return {
        name: {
            "rounds": len(r),
            f"speed_vs_{served}_median": round(statistics.median(r), 2),
            "min": round(min(r), 2),
            "max": round(max(r), 2),
        }
        for name, r in ratios.items()
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=60)
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-batch-size", type=int, default=8)
    ap.add_argument("--checkpoint", type=Path, default=REPO_ROOT / "build/doc-type/checkpoint")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch FP32 eager out")
    ap.add_argument("--variant", action="append", default=[], help="NAME=FOLDER[:PRECISION]")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "bench/results/cpu-runtimes.json")
    ap.add_argument(
        "--summarise", type=Path, nargs="+", help="only pool the rounds of these reports"
    )
    args = ap.parse_args(argv)
    if args.summarise:
        pooled = summarise([json.loads(p.read_text()) for p in args.summarise])
        for name, row in pooled.items():
            print(f"{name:24s} {row}")
        return

    batches = batches_of(args.documents, args.seed, args.checkpoint, args.max_batch_size)
    variants: dict[str, Run] = {}
    if not args.no_torch:
        variants["torch-fp32-eager"] = torch_eager(args.checkpoint, args.threads)
    for spec in args.variant:
        name, _, where = spec.partition("=")
        folder, _, precision = where.partition(":")
        variants[name] = served(Path(folder), precision or "fp32", args.threads)
    windows = sum(len(b.rows) for b in batches)
    real = sum(b.real_tokens for b in batches)
    print(f"{len(batches)} batches, {windows} windows, {real} real tokens; {args.rounds} rounds")
    seconds = measure(variants, batches, args.rounds)
    reference = next(iter(variants))
    diffs = agreement(variants, batches, reference)
    table: dict[str, Any] = {}
    for name, per_round in seconds.items():
        rates = [windows / s for s in per_round]
        table[name] = {
            "windows_per_s_median": round(statistics.median(rates), 2),
            "windows_per_s_min": round(min(rates), 2),
            "windows_per_s_max": round(max(rates), 2),
            "seconds_per_round": [round(s, 3) for s in per_round],
            f"max_abs_logit_diff_vs_{reference}": float(f"{diffs[name]:.3g}"),
        }
    base = table[reference]["windows_per_s_median"]
    for name, row in table.items():
        row[f"speed_vs_{reference}"] = round(row["windows_per_s_median"] / base, 2)
        print(
            f"{name:24s} {row['windows_per_s_median']:8.2f} windows/s "
            f"(min {row['windows_per_s_min']}, max {row['windows_per_s_max']}) "
            f"x{row[f'speed_vs_{reference}']} vs {reference}, "
            f"max |logit diff| {diffs[name]:.2e}"
        )
    report = {
        "command": "python -m bench.cpu_runtimes " + " ".join(argv or sys.argv[1:]),
        "documents": args.documents,
        "seed": args.seed,
        "batches": len(batches),
        "windows": windows,
        "real_tokens": real,
        "computed_tokens": sum(b.computed_tokens for b in batches),
        "threads": args.threads,
        "rounds": args.rounds,
        "variants": table,
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(),
            "load_average_at_end": os.getloadavg(),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
