"""Prometheus metrics of a worker process, served on DOCQ_WORKER_METRICS_PORT.

Shard workers run Celery's thread pool, so one process holds every shard's counters and
one endpoint per worker process shows them all: model load times (docq.model_control),
batches and their padding (the batcher), shard times. Give each worker process its own
port; 0 serves none.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

BATCHES = Counter("docq_worker_batches_total", "Batches sent to Triton.", ["model"])
WINDOWS = Counter("docq_worker_windows_total", "Windows sent to Triton.", ["model"])
TOKENS = Counter(
    "docq_worker_tokens_total",
    "Tokens sent to Triton: `real` ones, and `computed` ones (padding included); "
    "real / computed is the padding efficiency.",
    ["model", "kind"],
)
SHARD_SECONDS = Histogram(
    "docq_worker_shard_seconds",
    "Time to classify one shard and store its results (model load waits included).",
    ["model"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
