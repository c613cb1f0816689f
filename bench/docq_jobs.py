"""What both pipeline benches run on docq's stack: jobs through its public API, as a client
application sends them (one bulk upload timed to `succeeded`, the long upload, latency
probes while bulk jobs run), and the ceiling they are held to: Triton alone on the same
windows, packed by docq's own packer with the model's limits, with nothing in front of it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from bench.documents import padding_report, windows_of
from bench.procs import CpuMeter, percentile, worker_batches
from bench.stack import Stack
from client.errors import ClientError
from client.sdk import DocqClient
from corpus.doc_type import LabelledDocument
from docq.catalog import ModelCatalog
from docq.models import ModelSpec
from docq.text.packing import Batch, pack
from docq.text.windowing import Window
from workers.inference import TritonInference

JSON = {"content-type": "application/json"}  # a body encoded once, sent as it is


def submit(http: httpx.Client, docs: Sequence[LabelledDocument]) -> tuple[str, float]:
    body = json.dumps({"documents": [{"id": d.id, "text": d.text} for d in docs]}).encode()
    t = time.perf_counter()
    resp = http.post("/v1/jobs", content=body, headers=JSON)
    resp.raise_for_status()
    return resp.json()["id"], (time.perf_counter() - t) * 1000


def post_files(
    http: httpx.Client, files: list[tuple[str, bytes, str]], data: dict[str, str] | None = None
) -> tuple[httpx.Response, float]:
    """One multipart upload of (name, bytes, content type) files: the answer, ms to it."""
    t = time.perf_counter()
    resp = http.post("/v1/jobs", files=[("files", f) for f in files], data=data)
    return resp, (time.perf_counter() - t) * 1000


def run_docq(
    stack: Stack, docs: Sequence[LabelledDocument], small: Sequence[LabelledDocument] = ()
) -> dict[str, Any]:
    """Throughput: one bulk upload of the corpus, timed from the upload to `succeeded`; with
    `small`, 3-document jobs of them meanwhile, from the workers' first batch (SmallJobs)."""
    probe = SmallJobs(stack, small, SMALL_DURING_BULK_S, ready=started(stack)) if small else None
    http = httpx.Client(base_url=stack.url, headers=stack.headers, timeout=120)
    sdk = DocqClient(stack.url, http=http)  # following and reading as an application does
    before = worker_batches(stack.bulk_ports)
    meter = stack.meter()
    meter.start()
    t0 = time.monotonic()
    job_id, accept_ms = submit(http, docs)
    job = sdk.wait(job_id, poll_s=0.25)
    elapsed = time.monotonic() - t0
    after = worker_batches(stack.bulk_ports)
    sent = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    results = sum(1 for r in sdk.results(job_id) if "label" in r)
    small_jobs = (
        {"small_jobs": small_job_stats(probe.stop(), t0, time.monotonic())} if probe else {}
    )
    return small_jobs | {
        "computed_tokens": int(sent["docq_worker_tokens_totalcomputed"]),
        "real_tokens": int(sent["docq_worker_tokens_totalreal"]),
        "batches": int(sent["docq_worker_batches_total"]),
        "worker_padding_efficiency": round(
            sent["docq_worker_tokens_totalreal"] / sent["docq_worker_tokens_totalcomputed"], 4
        ),
        "worker_windows_per_batch": round(
            sent["docq_worker_windows_total"] / sent["docq_worker_batches_total"], 2
        ),
        "status": job["status"],
        "documents": job["documents"],
        "classified": results,
        "failures": job["documents"] - results,
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(job["documents"] / elapsed, 3),
        "bulk_accept_ms": round(accept_ms, 1),
        "cpu_s": meter.stop(),
    }


def upload_long(stack: Stack, docs: Sequence[LabelledDocument]) -> dict[str, Any]:
    """One client uploads `docs` in one request: the answer's latency, then the results."""
    with httpx.Client(base_url=stack.url, headers=stack.headers, timeout=120) as http:
        t = time.monotonic()
        job_id, accept_ms = submit(http, docs)
        job = DocqClient(stack.url, http=http).wait(job_id, poll_s=0.1)
        done = time.monotonic() - t
    return {
        "documents": len(docs),
        "answer": f"202 after {accept_ms:.0f} ms",
        "accept_ms": round(accept_ms, 1),
        "status": job["status"],
        "results_after_s": round(done, 2),
        "failed": job["progress"]["documents_failed"],
    }


def ceiling_batches(windows: Sequence[Window], model: ModelSpec) -> list[Batch]:
    """The corpus's windows packed as docq's batcher packs them (the model's batch size and
    token budget), sorted over the whole corpus at once: the least padding this packer can
    give, so the ceiling never computes more than docq's workers."""
    return pack(windows, model.max_batch_size, model.budget, ragged=model.ragged)


def run_triton_alone(stack: Stack, docs: Sequence[LabelledDocument], model: str) -> dict[str, Any]:
    """The ceiling: the corpus's windows as ceiling_batches() packs them, straight to Triton
    with twice the requests outstanding that docq's bulk workers keep, timed from the first
    request to the last answer; tokenizing happens before the clock starts."""
    catalog = ModelCatalog(stack.triton_url, stack.repo)
    spec = catalog.spec(model)
    catalog.close()
    windows = windows_of(docs, spec)
    batches = ceiling_batches(windows, spec)
    in_flight = 2 * stack.bulk_workers * stack.settings.triton_max_in_flight
    triton = TritonInference(stack.triton_url, max_in_flight=in_flight, timeout_s=300)
    meter = CpuMeter({"triton": stack.triton_pid})
    meter.start()
    t0 = time.perf_counter()
    triton.infer(spec, batches)
    elapsed = time.perf_counter() - t0
    triton.close()
    return {
        "documents": len(docs),
        "windows": len(windows),
        "batches": len(batches),
        "computed_tokens": sum(b.computed_tokens for b in batches),
        "real_tokens": sum(b.real_tokens for b in batches),
        "in_flight": in_flight,
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(len(docs) / elapsed, 3),
        "cpu_s": meter.stop(),
        "padding": padding_report(windows, batches),
    }


ACCEPT_UPLOADS = 200  # 1,000-document uploads the acceptance probe times
ACCEPT_EVERY_S = 0.5  # between two of them
SMALL_EVERY_S = 2.0  # between two 3-document jobs of the CPU bench's probe
SMALL_DURING_BULK_S = 0.5  # between two 3-document jobs during the GPU bench's bulk job


class SmallJobs:
    """3-document jobs of `docs`, one after the other every `every` seconds once `ready()`
    says so (or after 120 s), each timed from the upload to its final state, in a thread of
    their own while bulk jobs run; `samples` are (start, end, status)."""

    def __init__(
        self,
        stack: Stack,
        docs: Sequence[LabelledDocument],
        every: float,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.stack, self.docs, self.every, self._ready = stack, docs, every, ready
        self.samples: list[tuple[float, float, str]] = []
        self._running = threading.Event()
        self._running.set()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        deadline = time.monotonic() + 120
        while self._running.is_set() and time.monotonic() < deadline and not self._ready():
            time.sleep(0.1)
        stack = self.stack
        with httpx.Client(base_url=stack.url, headers=stack.headers, timeout=60) as http:
            sdk, i = DocqClient(stack.url, http=http), 0
            while self._running.is_set():
                batch = [self.docs[(i + k) % len(self.docs)] for k in range(3)]
                i += 3
                t = time.monotonic()
                try:
                    job_id, _ = submit(http, batch)
                    status = sdk.wait(job_id, poll_s=0.02)["status"]
                except (httpx.HTTPError, ClientError) as exc:
                    status = f"error: {exc!r}"
                self.samples.append((t, time.monotonic(), status))
                time.sleep(self.every)

    def stop(self) -> list[tuple[float, float, str]]:
        self._running.clear()
        self._thread.join(90)
        return self.samples


def started(stack: Stack) -> Callable[[], bool]:
    """True once the bulk workers sent a batch more than when this was made: the GPU bench's
    small jobs start with the bulk job's first batch."""

    def sent() -> float:
        return sum(v for k, v in worker_batches(stack.bulk_ports).items() if "batches" in k)

    base = sent()
    return lambda: sent() > base


def small_job_stats(samples: Sequence[tuple[float, float, str]], t0: float, t1: float) -> dict:
    """Upload-to-result seconds of the small jobs that ran wholly between t0 and t1."""
    inside = [(a, b, s) for a, b, s in samples if a >= t0 and b <= t1]
    ok = [b - a for a, b, s in inside if s == "succeeded"]
    return {
        "n": len(ok),
        "not_succeeded": len(inside) - len(ok),
        "p50_s": round(percentile(ok, 50), 3),
        "p95_s": round(percentile(ok, 95), 3),
        "max_s": round(max(ok), 3) if ok else None,
        "samples_s": [round(x, 3) for x in ok],
    }


def run_probes(
    stack: Stack, background: Sequence[LabelledDocument], small: Sequence[LabelledDocument]
) -> dict[str, Any]:
    """Latency while bulk jobs run: ACCEPT_UPLOADS 1,000-document uploads (acceptance; each
    cancelled at once, so it adds no work) and 3-document jobs (SmallJobs).
    A new bulk job of `background` starts whenever the last one ends, until enough uploads
    were timed; the one still running then is cancelled."""
    http = httpx.Client(base_url=stack.url, headers=stack.headers, timeout=120)
    thousand = [{"id": f"a{i}", "text": background[i % len(background)].text} for i in range(1000)]
    accept_body = json.dumps({"documents": thousand}).encode()
    running = threading.Event()
    accept_ms: list[float] = []

    def accept_probe() -> None:
        with httpx.Client(base_url=stack.url, headers=stack.headers, timeout=60) as c:
            while running.is_set() and len(accept_ms) < ACCEPT_UPLOADS:
                t = time.perf_counter()
                r = c.post("/v1/jobs", content=accept_body, headers=JSON)
                accept_ms.append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
                c.delete(f"/v1/jobs/{r.json()['id']}")  # acceptance only: skip the work
                time.sleep(ACCEPT_EVERY_S)

    bulk_id, _ = submit(http, background)
    bulk_jobs = 1
    while http.get(f"/v1/jobs/{bulk_id}").json()["status"] == "queued":
        time.sleep(0.1)
    running.set()
    t0 = time.monotonic()
    small_jobs = SmallJobs(stack, small, SMALL_EVERY_S)
    probe = threading.Thread(target=accept_probe)
    probe.start()
    while len(accept_ms) < ACCEPT_UPLOADS and probe.is_alive():
        if http.get(f"/v1/jobs/{bulk_id}").json()["status"] in ("succeeded", "failed"):
            bulk_id, _ = submit(http, background)
            bulk_jobs += 1
        time.sleep(0.25)
    running.clear()
    t1 = time.monotonic()
    probe.join()
    small_s = small_job_stats(small_jobs.stop(), t0, t1)
    http.delete(f"/v1/jobs/{bulk_id}")
    return {
        "background_jobs": {"documents": len(background), "jobs": bulk_jobs},
        "accept_ms": {
            "n": len(accept_ms),
            "p50": round(percentile(accept_ms, 50), 1),
            "p99": round(percentile(accept_ms, 99), 1),
            "max": round(max(accept_ms), 1),
            "samples": [round(ms, 1) for ms in accept_ms],
        },
        "small_job_s": {  # the keys of the runs saved before SmallJobs (report.summarise)
            "n": small_s["n"],
            "p50": small_s["p50_s"],
            "p95": small_s["p95_s"],
            "samples": small_s["samples_s"],
        },
    }
