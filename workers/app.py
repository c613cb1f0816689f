"""The Celery worker app: `celery -A workers.app worker -Q cpu -P threads`.

Shard workers run Celery's thread pool: the shards a process runs at once share its one
Batcher (cross-shard batches), its gRPC channel and its tokenizers. Clients (Redis, Triton
gRPC) are made lazily in the process that uses them, and dropped in every child after
fork (prefork pools): a gRPC channel does not survive fork().
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import httpx
from celery import Celery
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    celeryd_after_setup,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
)

from docq import logs
from docq.catalog import ModelCatalog
from docq.config import get_settings
from docq.queue import CPU_QUEUE, bulk_lanes, configure
from docq.store import JobStore, open_store
from workers import metrics, webhook_client
from workers.batcher import Batcher
from workers.inference import TritonInference
from workers.shard import WorkerContext

log = logging.getLogger(__name__)

# Configured when its configuration is first read (on_configure), not at import.
app = Celery("docq", include=["workers.tasks", "workers.stall"])


@app.on_configure.connect
def _configure(sender: Celery, **_: object) -> None:
    configure(sender, get_settings())


_store: JobStore | None = None
_ctx: WorkerContext | None = None
_http: httpx.Client | None = None
_ctx_lock = threading.Lock()


def store() -> JobStore:
    """This process's job store (all the webhooks worker needs: it calls no Triton)."""
    global _store
    with _ctx_lock:
        if _store is None:
            s = get_settings()
            _store = open_store(s)
        return _store


def http() -> httpx.Client:
    """This process's webhook client (workers/webhook_client.py: one deadline per attempt)."""
    global _http
    with _ctx_lock:
        if _http is None:
            _http = webhook_client.make_client(get_settings().webhook_timeout_s)
        return _http


def context() -> WorkerContext:
    """A shard worker's clients, built on first use (once, whichever thread comes first)."""
    global _ctx
    job_store = store()
    with _ctx_lock:
        if _ctx is None:
            s = get_settings()
            triton = TritonInference(
                s.triton_endpoints,
                max_in_flight=s.triton_max_in_flight,
                timeout_s=s.triton_timeout_s,
                health_interval_s=s.triton_health_interval_s,
                hold_s=s.triton_hold_s,
            )
            _ctx = WorkerContext(
                store=job_store,
                catalog=ModelCatalog(s.triton_endpoints, s.model_repository),
                batcher=Batcher(
                    triton.submit,
                    max_wait_s=s.batch_max_wait_ms / 1000,
                    max_in_flight=s.triton_max_in_flight,
                    max_queued_windows=s.batch_max_queued_windows,
                ),
            )
        return _ctx


@celeryd_after_setup.connect
def _consume_bulk_lanes(sender: str, instance: Any, **_: object) -> None:
    """A worker on `cpu` consumes every tenant lane of the bulk queue too (docq/queue.py):
    the lane count is one setting, not a list repeated in every `-Q` of the Procfile,
    compose and Kubernetes. Runs after `-Q` is applied, before consuming starts."""
    queues = instance.app.amqp.queues
    if CPU_QUEUE in queues.consume_from:
        for lane in bulk_lanes(get_settings().bulk_lanes):
            queues.select_add(lane)


@worker_process_init.connect
def _after_fork(**_: object) -> None:
    global _store, _ctx, _http, _ctx_lock
    _store, _ctx, _http, _ctx_lock = None, None, None, threading.Lock()  # no parent's sockets


@worker_init.connect
def _serve_metrics(**_: object) -> None:
    """The worker's metrics endpoint (workers/metrics.py), started in its main process."""
    s = get_settings()
    metrics.prepare()
    if s.worker_metrics_port:
        metrics.serve(s.worker_metrics_port, s.worker_metrics_host)


@worker_process_shutdown.connect
def _child_gone(pid: int | None = None, **_: object) -> None:
    metrics.child_exited(pid or os.getpid())


@after_setup_logger.connect
@after_setup_task_logger.connect
def _log_format(logger: logging.Logger, **_: object) -> None:
    """Celery's handlers, in the format DOCQ_LOG_FORMAT asks for (docq/logs.py)."""
    logs.install(logger, get_settings().log_format)


@task_prerun.connect
def _job_in_logs(task: object = None, args: Sequence[Any] | None = None, **_: object) -> None:
    """Every line a task logs names its job (and shard): tasks take (job_id, n or token)."""
    if args:
        shard = args[1] if len(args) > 1 and isinstance(args[1], int) else None
        logs.bind(job_id=str(args[0]), shard=shard)


@task_postrun.connect
def _job_out_of_logs(**_: object) -> None:
    logs.unbind()
