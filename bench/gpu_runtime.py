"""The torch-gpu runtime on a GPU: CUDA graphs against eager PyTorch, and against the old
architecture's way of running the model (PyTorch FP32, one document per call).

Runs the runtime's own `execute()` (conversion/runtimes/torch_gpu.py) in-process through
serving/pb_stub.py, on the demo model's architecture (its config.json; the weights are random,
which changes no timing): the time of one call per batch shape, median of many after a
warm-up, and the largest logit difference of graph replays from eager calls of the same
FP16 model. Prints a table and writes results/gpu-runtime.json under --out.

    python3 -m bench.gpu_runtime --config build/doc-type/checkpoint/config.json --out $OUT
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification

from serving import pb_stub

RUNTIME = Path(__file__).resolve().parents[1] / "serving" / "runtimes" / "torch_gpu.py"
SHAPES = [(1, 64), (1, 512), (2, 512), (8, 128), (8, 512), (32, 512), (64, 512)]


def windows(rows: int, length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, (rows, length), dtype=np.int64)
    ids[:, 0] = 101
    return ids, np.ones((rows, length), dtype=np.int64)


def timed(model: Any, ids: np.ndarray, mask: np.ndarray, repeat: int) -> float:
    """Median milliseconds of one execute() (it returns host arrays: the GPU work is done)."""
    call = [pb_stub.request(ids, mask)]
    for _ in range(5):
        pb_stub.answers(model, call)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        (response,) = pb_stub.answers(model, call)
        times.append((time.perf_counter() - t) * 1000)
        assert response.error is None, response.error.message
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, required=True, help="the model's config.json")
    ap.add_argument("--out", type=Path, default=Path("bench/results"))
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--max-batch-size", type=int, default=64)
    args = ap.parse_args()

    torch.manual_seed(0)
    version = Path(tempfile.mkdtemp()) / "doc-type" / "1"
    config = AutoConfig.from_pretrained(str(args.config))
    AutoModelForSequenceClassification.from_config(config).save_pretrained(version)
    runtime = pb_stub.load_runtime(RUNTIME)
    params = {"max_seq_len": "512", "graph_seq_step": "64"}

    start = time.perf_counter()
    graphs = pb_stub.instance(runtime, version, "GPU", args.max_batch_size, **params)
    capture_s = time.perf_counter() - start
    eager = pb_stub.instance(
        runtime, version, "GPU", args.max_batch_size, cuda_graphs="false", **params
    )
    old = pb_stub.instance(
        runtime, version, "GPU", args.max_batch_size, cuda_graphs="false", dtype="float32", **params
    )
    rows_out: list[dict[str, Any]] = []
    for rows, length in SHAPES:
        ids, mask = windows(rows, length, rows * 1000 + length)
        ms = {
            "fp16_graphs_ms": timed(graphs, ids, mask, args.repeat),
            "fp16_eager_ms": timed(eager, ids, mask, args.repeat),
            "fp32_eager_ms": timed(old, ids, mask, args.repeat),
        }
        (g,) = pb_stub.answers(graphs, [pb_stub.request(ids, mask)])[0].output_tensors
        (e,) = pb_stub.answers(eager, [pb_stub.request(ids, mask)])[0].output_tensors
        rows_out.append(
            {
                "shape": [rows, length],
                **{k: round(v, 3) for k, v in ms.items()},
                "graphs_vs_eager_speedup": round(ms["fp16_eager_ms"] / ms["fp16_graphs_ms"], 2),
                "fp16_graphs_windows_per_s": round(rows / ms["fp16_graphs_ms"] * 1000, 1),
                "max_abs_logit_diff_graphs_vs_eager": float(np.abs(g.array - e.array).max()),
            }
        )
    # The old architecture: FP32 eager, one 512-token document per call; docq: FP16 graphs,
    # packed batches of max_batch_size windows.
    one = next(r for r in rows_out if r["shape"] == [1, 512])
    full = next(r for r in rows_out if r["shape"] == [args.max_batch_size, 512])
    summary = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "model": {"layers": config.num_hidden_layers, "hidden": config.hidden_size},
        "max_batch_size": args.max_batch_size,
        "graphs_captured": len(graphs.graphs.graphs),
        "capture_s": round(capture_s, 2),
        "shapes": rows_out,
        "old_fp32_one_doc_windows_per_s": round(1000 / one["fp32_eager_ms"], 1),
        "docq_fp16_graphs_full_batch_windows_per_s": full["fp16_graphs_windows_per_s"],
    }
    summary["model_compute_ratio"] = round(
        summary["docq_fp16_graphs_full_batch_windows_per_s"]
        / summary["old_fp32_one_doc_windows_per_s"],
        1,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu-runtime.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{summary['device']}, torch {summary['torch']}, {summary['model']}")
    print(f"{summary['graphs_captured']} graphs captured in {summary['capture_s']} s")
    print("| shape | FP16 graphs ms | FP16 eager ms | FP32 eager ms | graphs speed-up | diff |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows_out:
        print(
            f"| {r['shape'][0]}x{r['shape'][1]} | {r['fp16_graphs_ms']} | {r['fp16_eager_ms']} "
            f"| {r['fp32_eager_ms']} | {r['graphs_vs_eager_speedup']}x "
            f"| {r['max_abs_logit_diff_graphs_vs_eager']:.1e} |"
        )
    print(
        f"old architecture (FP32 eager, 1 document of 512 tokens per call): "
        f"{summary['old_fp32_one_doc_windows_per_s']} windows/s; docq runtime (FP16 graphs, "
        f"{args.max_batch_size}x512): {summary['docq_fp16_graphs_full_batch_windows_per_s']} "
        f"windows/s; ratio {summary['model_compute_ratio']}x"
    )


if __name__ == "__main__":
    main()
