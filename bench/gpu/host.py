"""The torch-gpu runtime's host work per execute(), measured on any CPU.

On the H200 the GPU sits idle before each large call's staging copy while the stub's
Python reads, checks and lays out the requests (bench/gpu/NOTES.md, the host-gap profile).
This times exactly that part: the runtime's own TritonPythonModel.execute() on the flat
engine (attention cudnn, so the full-windows-first layout runs too) with the encoder's
forward replaced by one that returns zeros, on the serve bench's requests: 9 requests of
7 full windows (63 x 512), the same with each request's last window 60% long, and one
window. Median microseconds of `--repeat` calls, for the checkout and, with `--ref REV`
(a commit, checked out in a temporary git worktree), for that commit's runtime beside it
in the same run.

    .venv/bin/python -m bench.gpu.host --ref 5bcd376 --out bench/gpu/host-cpu-2026-12-04.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from bench.gpu.model import build_checkpoint
from bench.gpu.shapes import windows
from serving import pb_stub
from serving.runtimes import SOURCES, install

ROOT = SOURCES.parents[1]
SHAPES = {"63x512": (9, 7, 1.0), "63x512p": (9, 7, 0.6), "1x512": (1, 1, 1.0)}


def host_us(model_py: Path, checkpoint: Path, repeat: int) -> dict[str, float]:
    """Median us of one execute() per shape, the forward stubbed out."""
    model = pb_stub.instance(
        pb_stub.load_runtime(model_py), checkpoint, "CPU", 64, max_seq_len="512",
        attention="cudnn",
    )  # fmt: skip
    model.flat.attention = "cudnn"  # a CPU instance runs flash's maths; lay out as on a GPU
    model.flat.forward = lambda ids, pos, cu, order, *a, **k: torch.zeros(order.shape[0], 6)
    out = {}
    for name, (requests, rows, last) in SHAPES.items():
        batch = [pb_stub.request(*windows(rows, 512, i, last)) for i in range(requests)]
        pb_stub.answers(model, batch)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            pb_stub.answers(model, batch)
            times.append(time.perf_counter() - t)
        out[name] = round(statistics.median(times) * 1e6, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ref", help="also this commit's runtime, side by side")
    ap.add_argument("--repeat", type=int, default=500)
    args = ap.parse_args()
    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="docq-host-"))
    checkpoint = work / "m" / "1"
    build_checkpoint(checkpoint, tiny=True, device="cpu")
    sources = {"checkout": SOURCES}
    if args.ref:
        tree = work / "ref"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach",
                        str(tree), args.ref], check=True)  # fmt: skip
        sources[args.ref] = tree / "serving" / "runtimes"
    described = ["git", "-C", str(ROOT), "describe", "--always", "--dirty"]
    result: dict[str, Any] = {
        "command": f"python -m bench.gpu.host --repeat {args.repeat}"
        + (f" --ref {args.ref}" if args.ref else ""),
        "checkout": subprocess.run(described, capture_output=True, text=True).stdout.strip(),
        "cpu": os.cpu_count(),
        "unit": "us per execute(), median",
        "runs": {},
    }
    try:
        for label, runtimes in sources.items():
            folder = work / label.replace("/", "_")
            folder.mkdir()
            install("torch_gpu", folder, runtimes)  # as `docq convert` lays it out
            result["runs"][label] = host_us(folder / "model.py", checkpoint, args.repeat)
            print(label, result["runs"][label], flush=True)
    finally:
        if args.ref:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(work / "ref")], check=False)  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
