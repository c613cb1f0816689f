"""The torch-gpu runtime served by a real tritonserver, against the old runtime, on one GPU.

Builds a RoBERTa-large-shaped classifier (model.py: 24 layers, 1,024 wide, 16 heads, 6
labels, random weights: timing does not depend on them), lays it out as `docq convert
--runtime torch-gpu` does, starts tritonserver (devstack's `triton_server`, as the tests
start it; on the device the trimmed server devstack/carry/remote.sh puts in place) and
measures through gRPC (clients.py):

- p50/p95 of one request at a time at (1,512), (2,512), (7,512);
- seq/s over a sweep of requests in flight (client processes x threads), up to saturation
  (the sweep stops once one more doubling gains less than 3%).

In the same run, before the server starts, the in-process references (references.py):
the old runtime, PyTorch FP32 eager, one synchronous call per request as the old FastAPI
service ran it, and transformers FP16 eager. Each `--variant` (NAME or NAME:key=value,...,
model.Variant) is one more model in the same server with Target fields overridden; the first
is the generated default and gets the full sweep. Prints the table (report.py, rich) and
writes the JSON to --out.

    # on the H200 (docs/performance.md has the exact command):
    source devstack/carry/remote.sh
    python3 -m bench.gpu.serve --variant default --variant hf:engine=hf --out $OUT/serve.json
    # rehearsal on a CPU machine, tiny model, the wheel's server:
    .venv/bin/python -m bench.gpu.serve --tiny --seconds 1 --out /tmp/serve.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.gpu.clients import SHAPES, Load, key, one_at_a_time
from bench.gpu.model import DEFAULT, Variant, build_checkpoint, publish_variant
from bench.gpu.references import hf_fp16_eager, old_runtime
from bench.gpu.report import against_references, serve_table, serve_targets, show_serve, tree_note
from bench.report import write_json
from devstack.services import LoadFailed, triton_server
from docq.config import REPO_ROOT

# Requests in flight per level. A model of max_batch_size B is saturated only when more
# than B rows wait (one batch runs while the next forms): at (2, 512) a 128-row model
# needs 128 requests in flight, a 256-row one 256. The sweeps stop early once a level
# gains under 3%, so the upper levels cost nothing where the batch is already full.
IN_FLIGHT = [1, 2, 4, 8, 16, 32, 64, 128]  # the default variant's sweep
VARIANT_IN_FLIGHT = [8, 16, 32, 64, 128, 256]  # the others': only where batches form
LOAD_TIMEOUT_S = 400  # seconds tritonserver may take to load every variant
RESULTS = REPO_ROOT / "bench" / "results" / "serve.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS, help="the JSON file to write")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model: CPU rehearsal")
    ap.add_argument(
        "--variant", action="append", type=Variant.parse, default=[],
        help="NAME[:field=value,param.P=value,...]; the first is the one every figure is set "
        "against (default: the converter's defaults alone, `default`)",
    )  # fmt: skip
    # The defaults are every current figure's run (docs/performance.md).
    ap.add_argument("--seconds", type=float, default=0.8, help="measured time per level")
    ap.add_argument("--warm", type=float, default=0.3, help="unmeasured time per level")
    ap.add_argument("--requests", type=int, default=60, help="one-at-a-time requests")
    ap.add_argument("--processes", type=int, default=8, help="client processes")
    args = ap.parse_args(argv)
    args.variant = args.variant or [Variant(DEFAULT)]
    return args


def serve_variant(
    load: Load, url: str, name: str, default: bool, args: argparse.Namespace
) -> dict[str, Any]:
    """Each shape of one served variant: the default gets every shape one at a time and the
    full sweep (every level at multi-row shapes: the batches grow late); another, one at a
    time for single rows and a short sweep, stopped early, for the rest."""
    served: dict[str, Any] = {}
    for shape in SHAPES:
        single = shape[0] == 1
        timed = one_at_a_time(url, name, shape, args.requests) if default or single else None
        entry: dict[str, Any] = {"one_at_a_time": timed, "sweep": []}
        if default or not single:
            levels = IN_FLIGHT if default else VARIANT_IN_FLIGHT
            early = not default or single
            entry["sweep"] = load.sweep(url, name, shape, levels, early)
        served[key(shape)] = entry
        print(f"{name} {shape}: {entry['one_at_a_time']}"[:200], flush=True)
    return served


def main() -> None:
    args = parse_args()

    import torch
    from google.protobuf import json_format

    on_gpu = torch.cuda.is_available()
    device, repeat = ("cuda:0", 20) if on_gpu else ("cpu", 3)  # calls timed in-process
    variants = args.variant
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": torch.cuda.get_device_name(0) if on_gpu else "CPU (rehearsal)",
        "torch": torch.__version__,
        "tree": tree_note(),
        "variants": [vars(v) | {"label": v.label} for v in variants],
        "settings": {k: getattr(args, k) for k in ("seconds", "warm", "requests", "processes")},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as running:
        work = Path(tempfile.mkdtemp(prefix="docq-serve-"))
        running.callback(shutil.rmtree, work, ignore_errors=True)
        checkpoint, repo = work / "checkpoint", work / "repo"
        t = time.perf_counter()
        result["model"] = build_checkpoint(checkpoint, args.tiny, device)
        result["build_s"] = round(time.perf_counter() - t, 1)
        print(f"model built in {result['build_s']} s: {result['model']}", flush=True)
        result["old_runtime"] = old_runtime(checkpoint, device, repeat)
        print(f"old runtime: { {k: v['p50_ms'] for k, v in result['old_runtime'].items()} }")
        result["references"] = {"hf-fp16-eager": hf_fp16_eager(checkpoint, device, repeat)}
        print(f"references: {json.dumps(result['references'])[:600]}", flush=True)
        result["configs"] = {
            v.name: json_format.MessageToDict(publish_variant(repo, checkpoint, v, on_gpu))
            for v in variants
        }
        log, t = args.out.with_name("triton.log"), time.perf_counter()
        load = Load(args.processes, args.warm, args.seconds)  # spawned while the server loads
        running.callback(load.pool.terminate)
        while True:  # a variant that fails to load is reported, the others measured
            names = [v.name for v in variants]
            try:
                server = triton_server(repo, log, models=names, timeout=LOAD_TIMEOUT_S)
                url = running.enter_context(server)
                break
            except LoadFailed as exc:
                if set(exc.failed) >= set(names):
                    raise
                result.setdefault("load_failed", {}).update(exc.failed)
                print(f"not served, failed to load: {exc.failed}", flush=True)
                variants = [v for v in variants if v.name not in exc.failed]
        result["server_ready_s"] = round(time.perf_counter() - t, 1)
        print(f"tritonserver ready in {result['server_ready_s']} s", flush=True)
        result["served"] = {
            v.name: serve_variant(load, url, v.name, i == 0, args) for i, v in enumerate(variants)
        }
    result["table"] = serve_table(result)
    result["targets"] = serve_targets(result["table"])
    result["against_references"] = against_references(result["table"], result["references"])
    write_json(args.out, result)
    show_serve(result)


if __name__ == "__main__":
    main()
