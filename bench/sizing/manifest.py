"""Issue 37's 1,000,000-document job from object storage (docs/manifests.md), on the stack
as `make up` runs it (bench/stack.py: redis, tritonserver, a bulk and a priority worker,
the extract worker, the API as its own process), the objects in make up's directory store
(.run/objects, the default DOCQ_MANIFEST_URL).

`--objects` NDJSON objects of `--per-object` documents each (short invoice lines, made here,
in `tenants/bench/`) are named by one manifest. Measured: the time to the 202, Redis'
`used_memory` before and after it, and the time from the 202 to the first result a client
can page. With `--run-seconds`, the workers then run that long while `used_memory` is
sampled each second (its peak), and what the job's keys hold per answered document
(results, the answers ledger, id claims: `MEMORY USAGE`) is extrapolated linearly to the
whole job. The job is then cancelled (a million documents on two cores take hours).

    python -m bench.sizing manifest --objects 100 --per-object 10000 --run-seconds 180 \\
        --out bench/runs/manifest-run-cpu-DATE.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.sizing import Rows, used_memory
from bench.stack import Stack
from client.manifests import submit_manifest
from client.sdk import DocqClient
from docq import keys
from docq.config import REPO_ROOT
from docq.config.manifests import LOCAL_OBJECTS

WORDS = ["INVOICE", "total", "due", "EUR", "receipt", "order", "shipped", "lease", "net", "VAT"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--objects", type=int, default=100)
    p.add_argument("--per-object", type=int, default=10_000)
    p.add_argument("--timeout-s", type=float, default=300, help="for the first result")
    p.add_argument("--run-seconds", type=float, default=0, help="then let the workers run")


def write_objects(root: Path, objects: int, per_object: int) -> int:
    """`objects` NDJSON objects of `per_object` lines under `root`; their total bytes."""
    root.mkdir(parents=True, exist_ok=True)
    total = 0
    for o in range(objects):
        lines = (
            json.dumps({"id": f"o{o}-{i}", "text": f"{WORDS[i % 10]} {i} {WORDS[o % 10]} {o} " * 4})
            for i in range(per_object)
        )
        data = ("\n".join(lines) + "\n").encode()
        (root / f"part-{o:04d}.ndjson").write_bytes(data)
        total += len(data)
    return total


def held(r: redis.Redis, job_id: str, documents: int, answered: int) -> dict[str, Any]:
    """Bytes of the job's per-document keys (MEMORY USAGE, every field counted), per answered
    document (per document read for the id claims), and the whole job extrapolated."""
    per_key = {"results": keys.results, "answers": keys.answers, "ids": keys.document_ids}
    got: dict[str, Any] = {}
    for name, key in per_key.items():
        used = int(r.memory_usage(key(job_id), samples=0) or 0)
        fields = int(r.hlen(key(job_id)))
        got[name] = {"bytes": used, "fields": fields, "per_document": used / max(1, fields)}
    per_doc = sum(v["per_document"] for v in got.values())
    got["per_answered_document"] = round(per_doc, 1)
    got["extrapolated_for_job_bytes"] = round(per_doc * documents)
    got["answered"] = answered
    return got


def sample(r: redis.Redis, client: DocqClient, job_id: str, seconds: float) -> dict[str, Any]:
    """`used_memory` each second for `seconds` while the workers run; its peak, and where
    the job got to."""
    samples: list[tuple[float, int, Any]] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        job = client.job(job_id)
        samples.append(
            (round(seconds - (end - time.monotonic()), 1), used_memory(r), job["progress"])
        )
        time.sleep(1)
    return {"samples": samples, "peak_used_memory": max(s[1] for s in samples), "job": job}


def measure(st: Stack, batch: str, args: argparse.Namespace) -> dict[str, Any]:
    """The job's 202, its Redis, its first result and, with --run-seconds, its run."""
    r = redis.Redis.from_url(st.settings.redis_url)
    before = used_memory(r)
    with httpx.Client(base_url=st.url, headers=st.headers, timeout=600) as http:
        client = DocqClient(st.url, http=http)  # as an application submits and follows it
        started = time.monotonic()
        job_id = submit_manifest(client, prefix=f"{batch}/", model="doc-type")["id"]
        accepted_s = time.monotonic() - started
        after = used_memory(r)
        first_s = None
        while time.monotonic() - started < accepted_s + args.timeout_s:
            if next(client.results(job_id, page=1), None) is not None:
                first_s = round(time.monotonic() - started - accepted_s, 2)
                break
            time.sleep(0.2)
        status = client.job(job_id)
        running = sample(r, client, job_id, args.run_seconds) if args.run_seconds > 0 else None
        if running is not None:
            done = running["job"]["progress"]["documents_done"]
            running["held"] = held(r, job_id, args.objects * args.per_object, done)
        client.cancel(job_id)
    return {
        "parts": status["parts"]["total"],
        "accepted_s": round(accepted_s, 3),
        "redis_used_before": before,
        "redis_used_after_202": after,
        "redis_job_bytes": after - before,
        "first_result_after_202_s": first_s,
        "status_at_first_result": status,
        "running": running,
    }


def run(args: argparse.Namespace, head: dict[str, Any]) -> tuple[str, Rows, dict[str, Any]]:
    """Write the objects, run the job on a fresh stack: the table's title, rows, figures."""
    batch = f"bench-manifest-{uuid.uuid4().hex[:8]}"
    root = LOCAL_OBJECTS / "tenants" / "bench" / batch
    made = time.monotonic()
    size = write_objects(root, args.objects, args.per_object)
    made_s = round(time.monotonic() - made, 2)
    try:
        with tempfile.TemporaryDirectory(prefix="docq-sizing-manifest-") as work:
            repo = REPO_ROOT / "model_repository"
            with Stack(repo, Path(work), shard_size=64, extract=True, ready_s=600) as st:
                got = measure(st, batch, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    documents = args.objects * args.per_object
    first = got["first_result_after_202_s"]
    rows = [
        ("202 after (target 60 s)", f"{got['accepted_s']:.2f} s"),
        ("Redis for the queued job (target 1 GB)", f"{got['redis_job_bytes'] / 1e6:.2f} MB"),
        ("first result after the 202 (target 30 s)", "none" if first is None else f"{first} s"),
        ("parts", str(got["parts"])),
    ]
    if (running := got["running"]) is not None:
        per_doc, n = running["held"]["per_answered_document"], running["held"]["answered"]
        peak = f"{running['peak_used_memory'] / 1e6:.1f} MB"
        rows.append((f"Redis peak, {args.run_seconds:g} s run", peak))
        rows.append((f"job keys per answered document ({n:,})", f"{per_doc:.0f} B"))
        whole = running["held"]["extrapolated_for_job_bytes"] + got["redis_job_bytes"]
        rows.append(("whole job, extrapolated (linear; target 1 GB)", f"{whole / 1e6:.0f} MB"))
    figures = {"objects": args.objects, "documents": documents, "object_bytes": size}
    figures |= {"objects_written_s": made_s, **got}
    title = f"manifest job: {documents:,} documents, {args.objects} objects"
    return title, rows, {**head, **figures}
