"""Issue 37's 1,000,000-document job from object storage (docs/manifests.md), on the stack
as `make up` runs it (bench/stack.py: redis, tritonserver, a bulk and a priority worker,
the extract worker, the API as its own process), the objects in make up's directory store
(.run/objects, the default DOCQ_MANIFEST_URL).

`--objects` NDJSON objects of `--per-object` documents each (short invoice lines, made by
this script, in `tenants/bench/`) are named by one manifest. Measured: the time to the 202,
Redis' `used_memory` (INFO) before and after it, and the time from the 202 to the first
result a client can page. With `--run-seconds`, the workers then run that long while
`used_memory` is sampled each second (its peak), and what the job's keys hold per answered
document (results, the answers ledger, id claims: `MEMORY USAGE`) is extrapolated linearly
to the whole job. The job is then cancelled (classifying a million documents on two cores
takes hours).

    python -m bench.manifest --objects 100 --per-object 10000 --run-seconds 180 \\
        --out bench/runs/manifest-cpu-<date>.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import redis
from rich.console import Console
from rich.table import Table

from bench.stack import Stack
from docq import keys
from docq.config import REPO_ROOT
from docq.config.manifests import LOCAL_OBJECTS

WORDS = ["INVOICE", "total", "due", "EUR", "receipt", "order", "shipped", "lease", "net", "VAT"]


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


def sample(r: redis.Redis, client: httpx.Client, job_id: str, seconds: float) -> dict[str, Any]:
    """`used_memory` each second for `seconds` while the workers run; its peak, and where
    the job got to."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        job = client.get(f"/v1/jobs/{job_id}").json()
        used = int(r.info("memory")["used_memory"])
        samples.append([round(seconds - (end - time.monotonic()), 1), used, job["progress"]])
        time.sleep(1)
    return {"samples": samples, "peak_used_memory": max(s[1] for s in samples), "job": job}


def run(
    objects: int, per_object: int, part_bytes: int, timeout_s: float, run_s: float
) -> dict[str, Any]:
    os.environ["DOCQ_MANIFEST_PART_BYTES"] = str(part_bytes)  # read by the stack's Settings
    batch = f"bench-manifest-{uuid.uuid4().hex[:8]}"
    root = LOCAL_OBJECTS / "tenants" / "bench" / batch
    made = time.monotonic()
    size = write_objects(root, objects, per_object)
    made_s = time.monotonic() - made
    work = Path(tempfile.mkdtemp(prefix="docq-bench-manifest-"))
    try:
        repo = REPO_ROOT / "model_repository"
        with Stack(repo, work, shard_size=64, extract=True, ready_s=600) as st:
            r = redis.Redis.from_url(st.settings.redis_url)
            before = int(r.info("memory")["used_memory"])
            with httpx.Client(base_url=st.url, headers=st.headers, timeout=600) as client:
                started = time.monotonic()
                resp = client.post(
                    "/v1/jobs",
                    json={"model": "doc-type", "manifest": {"prefix": f"{batch}/"}},
                )
                accepted_s = time.monotonic() - started
                resp.raise_for_status()
                job_id = resp.json()["id"]
                after = int(r.info("memory")["used_memory"])
                first_s = None
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline:
                    page = client.get(f"/v1/jobs/{job_id}/results", params={"limit": 1}).json()
                    if page["data"]:
                        first_s = time.monotonic() - started - accepted_s
                        break
                    time.sleep(0.2)
                status = client.get(f"/v1/jobs/{job_id}").json()
                running = sample(r, client, job_id, run_s) if run_s > 0 else None
                if running is not None:
                    done = running["job"]["progress"]["documents_done"]
                    running["held"] = held(r, job_id, objects * per_object, done)
                client.delete(f"/v1/jobs/{job_id}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return {
        "objects": objects,
        "documents": objects * per_object,
        "object_bytes": size,
        "part_bytes": part_bytes,
        "parts": status["parts"]["total"],
        "objects_written_s": round(made_s, 2),
        "accepted_s": round(accepted_s, 3),
        "redis_used_before": before,
        "redis_used_after_202": after,
        "redis_job_bytes": after - before,
        "first_result_after_202_s": None if first_s is None else round(first_s, 2),
        "status_at_first_result": status,
        "running": running,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load_avg_1m": os.getloadavg()[0],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=100)
    p.add_argument("--per-object", type=int, default=10_000)
    p.add_argument("--part-bytes", type=int, default=64 * 1024)  # the setting's default
    p.add_argument("--timeout-s", type=float, default=300)
    p.add_argument("--run-seconds", type=float, default=0, help="then let the workers run")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    got = run(a.objects, a.per_object, a.part_bytes, a.timeout_s, a.run_seconds)
    table = Table(title=f"manifest job: {got['documents']:,} documents, {a.objects} objects")
    for col in ("what", "measured", "target"):
        table.add_column(col)
    first = got["first_result_after_202_s"]
    table.add_row("202 after", f"{got['accepted_s']:.2f} s", "<= 60 s")
    table.add_row("Redis for the queued job", f"{got['redis_job_bytes'] / 1e6:.2f} MB", "<= 1 GB")
    table.add_row(
        "first result after the 202", "none" if first is None else f"{first} s", "<= 30 s"
    )
    table.add_row("parts", str(got["parts"]), "")
    if got["running"] is not None:
        run_ = got["running"]
        per_doc, n = run_["held"]["per_answered_document"], run_["held"]["answered"]
        table.add_row(
            f"Redis peak, {a.run_seconds:g} s run", f"{run_['peak_used_memory'] / 1e6:.1f} MB", ""
        )
        table.add_row(f"job keys per answered document ({n:,})", f"{per_doc:.0f} B", "")
        whole = run_["held"]["extrapolated_for_job_bytes"] + got["redis_job_bytes"]
        table.add_row("whole job, extrapolated (linear)", f"{whole / 1e6:.0f} MB", "<= 1 GB")
    Console().print(table)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(got, indent=2) + "\n")


if __name__ == "__main__":
    main()
