"""Where the GPU waits for the host: each idle gap of a torch.profiler trace (CPU and CUDA
activity) put down to the host op that launched the work after it.

    from bench.gpu.gaps import gap_profile; gap_profile(lambda: model.execute(requests))
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCHES = ("cuda_runtime", "cuda_driver")


def host_gaps(trace: dict[str, Any], calls: int, least_us: float = 5.0) -> dict[str, Any]:
    """The GPU's idle gaps in a torch.profiler Chrome trace (CPU and CUDA activity), each
    put down to the host: the op that launched the work after the gap (its correlation id
    joins the kernel to its launch, the launch to the innermost op around it).

    A gap the GPU spent waiting for a launch ends with work launched after the gap began;
    its op says where the host was (a copy: the staging before a call; a kernel launched
    mid-layer: a launch-bound stretch). Per call: idle microseconds by launching op, and
    the largest gaps with the host ops and CUDA calls that ran longest inside each."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    work = sorted((e for e in events if e.get("cat") in GPU_WORK), key=lambda e: e["ts"])
    launch = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in LAUNCHES and "correlation" in e.get("args", {})
    }
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])

    def launched_by(ts: float) -> str:
        inside = [o for o in ops if o["ts"] <= ts <= o["ts"] + o["dur"]]
        return min(inside, key=lambda o: o["dur"])["name"] if inside else "(no op)"

    host = sorted((e for e in events if e.get("cat") in ("cpu_op", *LAUNCHES)),
                  key=lambda e: e["ts"])  # fmt: skip

    def during(start: float, stop: float) -> list[list[Any]]:
        """The host ops and CUDA calls that ran longest inside [start, stop] (us of it)."""
        spans = [
            (min(stop, e["ts"] + e["dur"]) - max(start, e["ts"]), e["name"][:50])
            for e in host
            if e["ts"] < stop and e["ts"] + e["dur"] > start
        ]
        return [[name, round(us, 1)] for us, name in sorted(spans, reverse=True)[:4]]

    by_op: dict[str, float] = defaultdict(float)
    gaps = []
    end = work[0]["ts"] + work[0]["dur"] if work else 0.0
    for e in work[1:]:
        gap = e["ts"] - end
        if gap >= least_us:
            call = launch.get(e.get("args", {}).get("correlation"))
            op = launched_by(call["ts"]) if call else "(no launch)"
            waited = call is not None and call["ts"] > end  # launched after the GPU went idle
            key = op if waited else f"{op} (launched before the gap)"
            by_op[key] += gap
            gaps.append((gap, key, e["name"][:70], during(end, e["ts"])))
        end = max(end, e["ts"] + e["dur"])
    gaps.sort(reverse=True)
    return {
        "idle_us_per_call_by_launching_op": {
            k: round(v / calls, 1) for k, v in sorted(by_op.items(), key=lambda kv: -kv[1])
        },
        "gaps_per_call": round(len(gaps) / calls, 1),
        "largest_gaps": [
            {"us": round(g, 1), "op": op, "next": n, "host": h} for g, op, n, h in gaps[:12]
        ],
    }


def gap_profile(fn: Callable[[], Any], calls: int = 5) -> dict[str, Any]:
    """host_gaps of `calls` back-to-back calls of `fn` (or why it could not be taken)."""
    from torch.profiler import ProfilerActivity, profile

    try:
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            return host_gaps(json.loads(Path(f.name).read_text()), calls)
    except Exception as exc:  # a profile that cannot be taken is reported, not fatal
        return {"error": repr(exc)[:300]}
