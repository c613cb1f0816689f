"""Where one Redis stops (issue 20, part 3): one redis-server configured as `make up`'s
(append-only file fsynced at every write), loaded job after job by docq's own code as the
API, a shard worker and a client call it; redis-server's CPU per document, and so the
documents/s at which it would fill its one core. Each client process plays, in turn:

- the API's upload: `api.submissions.submit` itself (tenant load, Idempotency-Key claim,
  `create_job` binding it, `enqueue_shards` on the broker, by default this same Redis,
  `recovery.enqueued`) after authenticating its API key; only Triton's catalogue is stubbed;
- a worker's shard as workers/tasks.py and workers/shard.py run it, inference aside: the
  message off its lane (kombu's basic_get, acknowledged after), the lease on receipt and
  while running, `get_job`, `mark_running`, `shard_completed`, `load_shard`, `finish_shard`
  with a result per document (a label, scores over the 6 labels), the webhook dispatch;
- the client: an authenticated poll of the job, then every results page;
- every `sweep_interval_s`, a worker's sweeper round (`sweep`, `audit`), jobs due for audit
  1 s after they were written instead of 30 s, so that a short run retires every job.

Not reproduced: Celery's task events and its consumer's BRPOP loop. Before the load, INFO's
`used_memory` per document with jobs queued and then with their results stored.

    python -m bench.sizing redis --clients 2 --seconds 20 --out redis-load.json
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from kombu.simple import SimpleQueue

from api.deps import Resources
from api.submissions import submit
from bench.procs import CpuMeter, listener
from bench.sizing import Rows, used_memory
from corpus.doc_type import LABELS, generate
from devstack.services import redis_server
from docq import webhooks
from docq.catalog import ModelCatalog
from docq.config import Settings
from docq.queue import make_celery, shard_queue
from docq.schemas import JobCreate
from docq.store import JobStore
from docq.store.connection import connect
from docq.store.tenants import Tenants
from workers.audit import audit
from workers.sweeper import Lease, sweep

MODEL = "doc-type"
PAGE = 100  # the results page limit a client reads with: the API's default
SHOWN = (
    "wall_s", "jobs", "documents", "incomplete_jobs", "docs_per_s", "redis_cpu_s",
    "redis_utilisation", "redis_cpu_ms_per_doc", "redis_saturation_docs_per_s",
)  # fmt: skip


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clients", type=int, default=mp.cpu_count())
    p.add_argument("--docs-per-job", type=int, default=64)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--memory-jobs", type=int, default=50)
    p.add_argument("--drain-s", type=float, default=30, help="to finish jobs after --seconds")
    p.add_argument("--data-dir", type=Path, help="redis-server's directory (default: temporary)")


def _result(doc_id: str, rng: random.Random) -> dict[str, Any]:
    """A result as run_shard writes it: a label, its scores over every label, the windows."""
    raw = [rng.random() for _ in LABELS]
    scores = {label: round(v / sum(raw), 6) for label, v in zip(LABELS, raw, strict=True)}
    label = max(scores, key=lambda k: scores[k])
    return {"id": doc_id, "label": label, "scores": scores, "windows": rng.choice((1, 1, 2))}


class Side:
    """One client process's API, worker and client, on its own tenant and connections."""

    def __init__(self, url: str, name: str, docs_per_job: int) -> None:
        self.settings = Settings(redis_url=url, broker_url=url, api_key_secret="redis-load")
        s = self.settings
        self.store = JobStore.from_url(url, shard_size=s.shard_size, ttl_s=s.job_ttl_s)
        self.celery = make_celery(s)
        # the model catalogue's stand-in: Triton is not part of this load
        catalog = cast(ModelCatalog, SimpleNamespace(require=lambda name: None))
        self.deps = Resources(s, self.store, catalog, self.celery)
        self.tenants = Tenants(self.store.r, secret=s.api_key_secret)
        self.tenant = name
        _, self.api_key = self.tenants.create_key(name)
        self.docs = generate(docs_per_job, seed=1)
        self.rng = random.Random(name)
        self.conn = self.celery.connection_for_read()
        self.uploads = 0  # every job it wrote, counted or not
        first = self.upload()  # warm, before any figure: scripts loaded, connections open
        # every job of a side takes the same lane (its tenant's, for its size): asked once
        self.lane = self.conn.SimpleQueue(shard_queue(self.store.get_job(first), s.bulk_lanes))
        self.work()

    def _auth(self) -> str:
        tenant = self.tenants.authenticate(self.api_key)
        assert tenant == self.tenant
        return tenant

    def upload(self) -> str:
        """POST /v1/jobs with an Idempotency-Key: the API's own orchestration."""
        body = {"model": MODEL, "documents": [{"id": d.id, "text": d.text} for d in self.docs]}
        answer = submit(self.deps, self._auth(), JobCreate.model_validate(body), uuid.uuid4().hex)
        self.uploads += 1
        return answer.answer.id

    def work(self) -> int:
        """Run every shard waiting in this side's lane; returns how many."""
        done = 0
        while True:
            try:
                message = self.lane.get(block=False)
            except SimpleQueue.Empty:
                return done
            job_id, n = message.payload[0]  # Celery's protocol 2: [args, kwargs, embed]
            self._shard(job_id, n)
            message.ack()
            done += 1

    def _shard(self, job_id: str, n: int) -> None:
        s, store = self.settings, self.store
        store.recovery.hold(job_id, n, time.time() + s.shard_lease_s)  # on receipt (tasks.py)
        with Lease(store, job_id, n, s.shard_lease_s) as lease:
            job = store.get_job(job_id)
            if job.status.final:
                webhooks.dispatch(store, self.celery, job_id)
            elif store.mark_running(job_id) is not None and not store.shard_completed(job_id, n):
                documents = store.load_shard(job, n)
                results = [(d.index, _result(d.id, self.rng)) for d in documents]
                drop = not s.keep_documents
                if store.finish_shard(job_id, n, results, drop_documents=drop).performed:
                    webhooks.dispatch(store, self.celery, job_id)
        lease.release()

    def sweep(self) -> None:
        """One round of a worker's sweeper thread (workers/sweeper.py `_run`)."""
        s, now = self.settings, time.time()
        sweep(self.store, self.celery, lease_s=s.shard_lease_s, now=now, lanes=s.bulk_lanes)
        audit(self.store, self.celery, every_s=1.0, now=now, lanes=s.bulk_lanes)

    def read(self, job_id: str) -> int | None:
        """GET the job; once final, every results page: the documents with a label (None
        while the job runs)."""
        job = self.store.get_job(job_id, tenant=self._auth())
        if not job.status.final:
            return None
        labelled, cursor = 0, 0
        while True:
            job = self.store.get_job(job_id, tenant=self._auth())
            data, nxt = self.store.results_page(job, cursor, PAGE)
            labelled += sum(1 for r in data if "label" in r)
            if nxt is None:
                return labelled
            cursor = nxt


def _client(i: int, url: str, args: argparse.Namespace, go: Any, out: Any) -> None:
    side = Side(url, f"load-{i}", args.docs_per_job)
    out.put(("ready", i))
    go.wait()
    deadline = time.monotonic() + args.seconds
    pending: list[str] = []
    sample = {"client": i, "jobs": 0, "documents": 0, "incomplete_jobs": 0, "shards": 0}
    drain_until = deadline + args.drain_s
    next_sweep = time.monotonic() + side.settings.sweep_interval_s
    while time.monotonic() < deadline or (pending and time.monotonic() < drain_until):
        if time.monotonic() < deadline:
            pending.append(side.upload())
        sample["shards"] += side.work()
        for job_id in list(pending):
            labelled = side.read(job_id)
            if labelled is not None:
                pending.remove(job_id)
                sample["jobs"] += 1
                sample["documents"] += labelled
                sample["incomplete_jobs"] += labelled != args.docs_per_job
        if time.monotonic() >= next_sweep:
            side.sweep()
            next_sweep += side.settings.sweep_interval_s
    sample["unfinished_jobs"], sample["uploads"] = len(pending), side.uploads
    out.put(("done", sample))


def memory(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """INFO memory's used_memory per document: with K jobs queued (documents and messages
    stored), then with their results stored (documents dropped unless keep_documents)."""
    side = Side(url, "memory", args.docs_per_job)
    before = used_memory(side.store.r)
    jobs = [side.upload() for _ in range(args.memory_jobs)]
    queued = used_memory(side.store.r)
    side.work()
    assert all(side.read(j) == args.docs_per_job for j in jobs), "a memory job is incomplete"
    finished = used_memory(side.store.r)
    n = args.memory_jobs * args.docs_per_job
    return {
        "jobs": args.memory_jobs,
        "documents": n,
        "uploads": side.uploads,
        "used_memory_before": before,
        "used_memory_queued": queued,
        "used_memory_finished": finished,
        "bytes_per_queued_document": round((queued - before) / n),
        "bytes_per_stored_result": round((finished - before) / n),
    }


def load(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """`args.clients` processes for `args.seconds`: documents/s, redis-server's CPU per
    document and the rate at which it would fill its core."""
    ctx = mp.get_context("spawn")  # each process builds its own clients (STYLE.md, 4)
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_client, args=(i, url, args, go, out)) for i in range(args.clients)]
    for p in procs:
        p.start()
    for _ in procs:
        assert out.get(timeout=120)[0] == "ready"
    meter = CpuMeter({"redis": listener(int(url.rsplit(":", 1)[1].split("/")[0]))})
    meter.start()
    t0 = time.perf_counter()
    go.set()
    samples = [out.get(timeout=args.seconds + args.drain_s + 120)[1] for _ in procs]
    wall, redis_cpu = round(time.perf_counter() - t0, 3), meter.stop()["redis"]
    for p in procs:
        p.join(30)
    samples.sort(key=lambda s: s["client"])
    docs = sum(s["documents"] for s in samples)
    return {
        "redis_version": connect(url).info("server")["redis_version"],
        "clients": args.clients,
        "docs_per_job": args.docs_per_job,
        "seconds": args.seconds,
        "wall_s": wall,
        "jobs": sum(s["jobs"] for s in samples),
        "documents": docs,
        "incomplete_jobs": sum(s["incomplete_jobs"] + s["unfinished_jobs"] for s in samples),
        "docs_per_s": round(docs / wall, 1),
        "redis_cpu_s": redis_cpu,
        "redis_utilisation": round(redis_cpu / wall, 3),
        "redis_cpu_ms_per_doc": round(1000 * redis_cpu / docs, 4) if docs else None,
        "redis_saturation_docs_per_s": round(docs / redis_cpu) if docs and redis_cpu else None,
        "samples": samples,
    }


def run(args: argparse.Namespace, head: dict[str, Any]) -> tuple[str, Rows, dict[str, Any]]:
    """The memory jobs, then the load, on one redis-server: the table's title, its rows and
    the run's figures."""
    with tempfile.TemporaryDirectory() as tmp, redis_server(args.data_dir or Path(tmp)) as url:
        mem = memory(url, args)
        s = {**head, **load(url, args), "memory": mem}
    settings = Settings()  # what each Side is made of (DOCQ_* as set), for the record
    s |= {"shard_size": settings.shard_size, "keep_documents": settings.keep_documents}
    s["jobs_written"] = mem["uploads"] + sum(x["uploads"] for x in s["samples"])
    rows = [(key, str(s[key])) for key in SHOWN]
    memory_keys = ("bytes_per_queued_document", "bytes_per_stored_result")
    rows += [(f"used_memory {key}", str(mem[key])) for key in memory_keys]
    return f"one redis-server, {args.clients} clients, {s['cpu_count']} cores", rows, s
