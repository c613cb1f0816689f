"""How long the API takes to accept one big bulk upload (issue 19): the GPU bench's
20,000-document JSON body (~60 MB, bench/docq_jobs.py's `submit`), timed from sending it to
its 202, and to the first shard message on the broker (when a worker can start: a large
upload's first shards are enqueued before the rest is stored, api/submissions.py), for this
tree and an older commit side by side in one run.

Both APIs run as their own processes against one redis-server configured as `make up`'s
(append-only file, fsync at every write) and one tritonserver for the model catalogue, as
bench/upload_files.py does. No worker runs: acceptance is the API's and Redis's work alone
(parse, validate, tenant limits, shards packed and written, shards enqueued). Before each
upload Redis is emptied, so every upload meets the same store; the two sides take turns,
so the noise of a shared machine falls on both. `--redis sentinel` runs a master, a replica
and three Sentinels instead, with every upload waiting for the replica (WAIT) before its 202.

    python -m bench.accept --baseline 88de9fa --repeats 5 --out bench/accept-cpu-2026-12-02.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from bench.stack import settings_env, tenant_headers
from corpus.doc_type import generate
from devstack.sentinels import redis_sentinels
from devstack.services import REPO, api_server, redis_server, triton_server
from docq.config import Settings
from docq.queue import CPU_QUEUE, bulk_lanes
from docq.store.connection import connect

console = Console()


def body_of(n: int, seed: int) -> bytes:
    """The bench's bulk upload (bench/docq_jobs.py submit): `n` documents of the corpus."""
    docs = generate(n, seed)
    return json.dumps({"documents": [{"id": d.id, "text": d.text} for d in docs]}).encode()


@contextmanager
def tree_at(commit: str) -> Iterator[Path]:
    """The source tree of `commit`, unpacked (git archive) into a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="docq-accept-base-") as tmp:
        archive = subprocess.run(
            ["git", "archive", commit], cwd=REPO, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        yield Path(tmp)


def upload(url: str, headers: dict[str, str], body: bytes) -> tuple[float, str]:
    """Milliseconds from sending `body` to its 202, and the job's id."""
    ms, job_id, _ = watched_upload(url, headers, body, None, [])
    return ms, job_id


def watched_upload(
    url: str, headers: dict[str, str], body: bytes, broker: Any, queues: list[str]
) -> tuple[float, str, float | None]:
    """`upload`, and the milliseconds from sending `body` to the first message on any of
    `queues` of `broker` (polled every millisecond from a thread; None without a broker)."""
    first: list[float] = []
    answered = threading.Event()

    def watch(t: float) -> None:
        while True:
            late = answered.is_set()  # read first: a message seen after the 202 still counts
            if sum(int(broker.llen(q)) for q in queues):
                first.append((time.perf_counter() - t) * 1000)
                return
            if late:  # answered with nothing enqueued: a defect, raised below
                return
            time.sleep(0.001)

    with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
        t = time.perf_counter()
        watcher = threading.Thread(target=watch, args=(t,), daemon=True)
        if broker is not None:
            watcher.start()
        resp = client.post("/v1/jobs", content=body, headers={"content-type": "application/json"})
        ms = (time.perf_counter() - t) * 1000
        answered.set()
        if broker is not None:
            watcher.join()
    if resp.status_code != 202:
        raise RuntimeError(f"upload answered {resp.status_code}: {resp.text[:300]}")
    if broker is not None and not first:
        raise RuntimeError("upload answered 202 with no shard on the broker")
    return ms, str(resp.json()["id"]), first[0] if first else None


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(ms), 1),
        "min_ms": round(min(ms), 1),
        "max_ms": round(max(ms), 1),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=777, help="the GPU bench's corpus seed")
    ap.add_argument("--repeats", type=int, default=5, help="timed uploads per side")
    ap.add_argument("--baseline", default=None, help="a commit whose API runs beside this one")
    ap.add_argument("--redis", choices=["single", "sentinel"], default="single")
    ap.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = ap.parse_args(argv)
    t = time.monotonic()
    body = body_of(args.docs, args.seed)
    console.print(f"body: {len(body) / 1e6:.1f} MB, built in {time.monotonic() - t:.1f} s")
    load_before = os.getloadavg()  # the machine is shared: say how busy it was
    samples: dict[str, list[float]] = {}
    first_shard: dict[str, list[float]] = {}
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="docq-accept-")))
        if args.redis == "sentinel":
            redis_url = stack.enter_context(redis_sentinels(work / "redis")).url
        else:
            redis_url = stack.enter_context(redis_server(work / "redis"))
        triton_url = stack.enter_context(
            triton_server(REPO / "model_repository", work / "triton.log")
        )
        s = Settings(
            redis_url=redis_url,
            triton_grpc_url=triton_url,
            model_repository=REPO / "model_repository",
            shard_size=64,
            redis_wait_replicas=1 if args.redis == "sentinel" else 0,
        )
        trees = {"new": REPO}
        if args.baseline:
            trees[f"old ({args.baseline})"] = stack.enter_context(tree_at(args.baseline))
        urls: dict[str, str] = {}
        for name, tree in trees.items():
            env = {**settings_env(s), "PYTHONPATH": str(tree)}  # that tree's code, not ours
            log = work / f"api-{len(urls)}.log"
            urls[name] = stack.enter_context(api_server(env, log, tree=tree))
            samples[name], first_shard[name] = [], []
        r = connect(redis_url, sentinel_master=s.redis_sentinel_master)
        queues = [CPU_QUEUE, *bulk_lanes(s.bulk_lanes)]  # the broker is the store's Redis
        warm = body_of(200, args.seed + 1)
        for url in urls.values():  # the first upload warms the catalogue and pools
            upload(url, tenant_headers(s), warm)
        for i in range(args.repeats):
            order = list(urls) if i % 2 == 0 else list(reversed(urls))
            for name in order:
                r.flushdb()
                ms, _, first = watched_upload(urls[name], tenant_headers(s), body, r, queues)
                assert first is not None
                samples[name].append(round(ms, 1))
                first_shard[name].append(round(first, 1))
                console.print(
                    f"round {i + 1} {name}: 202 after {ms:.0f} ms, first shard {first:.0f}"
                )
    sides: dict[str, dict[str, Any]] = {
        name: {
            **summary(ms),
            "samples_ms": ms,
            "first_shard_median_ms": round(statistics.median(first_shard[name]), 1),
            "first_shard_samples_ms": first_shard[name],
        }
        for name, ms in samples.items()
    }
    report = {
        "what": f"one {args.docs}-document JSON upload answered 202 (no workers), "
        f"redis {args.redis}" + (" (WAIT for 1 replica)" if args.redis == "sentinel" else ""),
        "command": "python -m bench.accept " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "body_bytes": len(body),
        "documents": args.docs,
        "shard_size": s.shard_size,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "sides": sides,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    table = Table(title=report["what"])
    cols = ("side", "202 after, median ms", "min ms", "max ms", "docs/s accepted")
    for col in (*cols, "first shard enqueued, median ms", "samples ms (202 / first shard)"):
        table.add_column(
            col, justify="left" if col in ("side", "samples ms (202 / first shard)") else "right"
        )
    for name, side in sides.items():
        table.add_row(
            name,
            f"{side['median_ms']:.0f}",
            f"{side['min_ms']:.0f}",
            f"{side['max_ms']:.0f}",
            f"{args.docs / side['median_ms'] * 1000:,.0f}",
            f"{side['first_shard_median_ms']:.0f}",
            ", ".join(
                f"{a:.0f}/{b:.0f}"
                for a, b in zip(side["samples_ms"], side["first_shard_samples_ms"], strict=True)
            ),
        )
    console.print(table)
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
