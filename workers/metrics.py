"""Prometheus metrics of a worker process, served on DOCQ_WORKER_METRICS_PORT.

Shard workers run Celery's thread pool, so one process holds every shard's counters and
one endpoint per worker process shows them all: model load times (docq.model_control),
batches and their padding (the batcher), documents, windows and shard times, jobs
finished and their time from upload to result, Triton requests per endpoint (latency,
errors, which endpoints are up). The webhooks worker is a prefork pool: its children
count their delivery attempts in prometheus-client's multiprocess mode (the library's own
PROMETHEUS_MULTIPROC_DIR, set in the process's environment before it starts), and its
main process serves what all of them counted. Give each worker process its own port; 0
serves none.
"""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime

from prometheus_client import Counter, Gauge, Histogram, multiprocess, start_http_server

from docq.jobs import JobRecord, JobStatus
from docq.metrics import JOBS_FINISHED, multiprocess_dir, registry

log = logging.getLogger(__name__)

BATCHES = Counter("docq_worker_batches_total", "Batches sent to Triton.", ["model"])
WINDOWS = Counter("docq_worker_windows_total", "Windows sent to Triton.", ["model"])
TOKENS = Counter(
    "docq_worker_tokens_total",
    "Tokens sent to Triton: `real` ones, and `computed` ones (padding included); "
    "real / computed is the padding efficiency.",
    ["model", "kind"],
)
BATCH_WINDOWS = Histogram(
    "docq_worker_batch_windows",
    "Windows per batch sent to Triton (the batch size).",
    ["model"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
SHARD_SECONDS = Histogram(
    "docq_worker_shard_seconds",
    "Time to classify one shard and store its results (model load waits included).",
    ["model"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
DOCUMENTS = Counter(
    "docq_documents_processed_total",
    "Documents given a result by a shard: `classified`, or `failed` (an error result).",
    ["model", "outcome"],
)
JOB_SECONDS = Histogram(
    "docq_job_duration_seconds",
    "Time from a job's upload to its last result (the job becoming final).",
    ["model"],
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200),
)
TRITON_SECONDS = Histogram(
    "docq_triton_request_seconds",
    "Time from sending a batch to one Triton endpoint to its answer (successful ones).",
    ["endpoint", "model"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TRITON_ERRORS = Counter(
    "docq_triton_request_errors_total",
    "Batches that failed at one Triton endpoint, by reason (unavailable, model_missing, "
    "timeout, invalid, other); all but invalid are sent to another endpoint.",
    ["endpoint", "model", "reason"],
)
TRITON_HELD = Counter(
    "docq_triton_batches_held_total",
    "Batches that found no Triton endpoint able to take them and waited for one to come "
    "back (DOCQ_TRITON_HOLD_S) instead of failing their shards at once.",
    ["model"],
)
TRITON_UP = Gauge(
    "docq_triton_endpoint_up",
    "1 while this process sends batches to the endpoint, 0 while its health check fails.",
    ["endpoint"],
    multiprocess_mode="livemin",
)
EXTRACT_SECONDS = Histogram(
    "docq_extract_seconds",
    "Time to read one uploaded file into text (its isolated child included), by content "
    "type and outcome (read, or ExtractionFailed's code).",
    ["content_type", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
EXTRACT_PAGES = Counter(
    "docq_extract_pages_total",
    "Pages read from uploaded files, by how they were read (text, ocr, mixed).",
    ["extraction"],
)
WEBHOOK_ATTEMPTS = Counter(
    "docq_webhook_attempts_total",
    "Webhook delivery attempts, by the delivery's state after the attempt (delivered, "
    "pending: to be retried, failed, dead_lettered).",
    ["outcome"],
)


def prepare() -> None:
    """Empty the multiprocess folder, if any, in a worker's main process before it forks:
    files of a previous run of the same worker would otherwise add to this one's counts."""
    folder = multiprocess_dir()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)


def serve(port: int, host: str) -> None:
    """Serve the worker's metrics from its main process (a prefork pool's children's too)."""
    start_http_server(port, addr=host, registry=registry())
    log.info("worker metrics on %s:%d", host, port)


def child_exited(pid: int) -> None:
    """Drop a dead child's live gauges (multiprocess mode); its counters stay counted."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(pid)


def job_final(job: JobRecord, status: JobStatus | None) -> None:
    """Count a job this process made final, and its time from upload to now."""
    if status is None:  # the job expired meanwhile
        return
    JOBS_FINISHED.labels(job.model, status.value).inc()
    JOB_SECONDS.labels(job.model).observe((datetime.now(UTC) - job.created_at).total_seconds())
