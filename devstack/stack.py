"""Every process of the local stack, described once.

The Procfile runs each of them as `python -m devstack NAME` with the default ports; the
test fixtures and the bench start the same command lines on free ports (services.py). A
change here (a worker's pool, a Redis flag) reaches all three.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN_DIR = REPO / ".run"  # make up's data (Redis AOF); ignored by git

# Threads of one shard worker process: its shards share one batcher (cross-shard batches)
# and one gRPC channel.
SHARD_THREADS = 4
# Shards one extract worker reads at once; each reads DOCQ_READ_FILES_AT_ONCE files at once
# in child processes (docq.extract), so this times that is the cores it may take.
EXTRACT_THREADS = 2
# On one shared box the API answers first, then the workers, then batch inference (nice).
WORKER_NICE = 5
TRITON_NICE = 10
# Where the webhooks worker's prefork children write their metrics; emptied at its start.
# The same path in deploy/ (/tmp is a writable emptyDir in the pods).
WEBHOOKS_METRICS_DIR = "/tmp/docq-webhooks-metrics"


@dataclass(frozen=True)
class Process:
    """One process of the stack: its command line, extra environment and niceness."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    nice: int = 0


def redis(port: int, data_dir: Path) -> list[str]:
    """redis-server on loopback with an append-only file fsynced at every write: an upload
    answered 202 survives a crash of Redis (at the cost of one fsync per write)."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError("redis-server is not installed (make up / make test install it)")
    return [
        exe,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(data_dir),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
    ]


def triton(*args: str) -> list[str]:
    """The tritonserver launcher (serving/server.py); `args` are its options."""
    return [sys.executable, "-m", "serving.server", *args]


def api() -> list[str]:
    return [sys.executable, "-m", "api.main"]


def worker(
    queues: str, name: str, *, concurrency: int, pool: str, log_level: str = "INFO"
) -> list[str]:
    """A Celery worker: `threads` for shard workers (shards share a batcher), `prefork`
    for the webhooks worker (deliveries are independent and block on the network);
    `log_level` is DOCQ_LOG_LEVEL's (Celery's --loglevel sets its own and docq's loggers)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.app",
        "worker",
        "-Q",
        queues,
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "--hostname",
        f"{name}@%h",
        "--loglevel",
        log_level,
    ]


def flower(port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.app",
        "flower",
        "--address=127.0.0.1",
        f"--port={port}",
    ]


def local_stack(log_level: str = "INFO") -> dict[str, Process]:
    """What `make up` runs, by Procfile name, on the default ports (the settings' own);
    `log_level`: the workers' (DOCQ_LOG_LEVEL, which `python -m devstack` passes)."""
    return {
        "redis": Process(redis(6379, RUN_DIR / "redis")),
        "triton": Process(triton(), nice=TRITON_NICE),
        "api": Process(api()),
        "worker": Process(
            # `cpu`: the bulk queue with its DOCQ_BULK_LANES tenant lanes (workers/app.py)
            worker("cpu", "cpu", concurrency=SHARD_THREADS, pool="threads", log_level=log_level),
            {"DOCQ_WORKER_METRICS_PORT": "9101"},
            WORKER_NICE,
        ),
        "priority": Process(
            worker(
                "cpu-priority",
                "priority",
                concurrency=SHARD_THREADS,
                pool="threads",
                log_level=log_level,
            ),
            {"DOCQ_WORKER_METRICS_PORT": "9102"},
            WORKER_NICE,
        ),
        "extract": Process(
            # files (PDF, scans, DOCX, HTML) read into text before their shards are classified
            worker(
                "extract",
                "extract",
                concurrency=EXTRACT_THREADS,
                pool="threads",
                log_level=log_level,
            ),
            {"DOCQ_WORKER_METRICS_PORT": "9104"},
            WORKER_NICE,
        ),
        "webhooks": Process(
            worker("webhooks", "webhooks", concurrency=4, pool="prefork", log_level=log_level),
            # prefork children count in prometheus-client's multiprocess mode (workers/metrics.py)
            {"DOCQ_WORKER_METRICS_PORT": "9103", "PROMETHEUS_MULTIPROC_DIR": WEBHOOKS_METRICS_DIR},
        ),
        "flower": Process(flower(5555)),
    }


def baseline(port: int, workers: int) -> list[str]:
    """The old architecture the bench compares docq with (bench/baseline/app.py): Gunicorn
    with `workers` Uvicorn workers, each holding its own copy of the model; not part of
    `make up`."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "bench.baseline.app:app",
        "-k",
        "uvicorn_worker.UvicornWorker",
        "-w",
        str(workers),
        "-b",
        f"127.0.0.1:{port}",
        "--timeout",
        "300",
    ]
