"""The Celery worker app: `celery -A workers.app worker -Q cpu`.

Clients (Redis, Triton gRPC) are made lazily in the process that uses them, and dropped
in every child after fork: a gRPC channel does not survive fork().
"""

from __future__ import annotations

from celery.signals import worker_process_init

from docq.catalog import ModelCatalog
from docq.config import get_settings
from docq.queue import make_celery
from docq.store import JobStore
from workers.inference import TritonInference
from workers.shard import WorkerContext

app = make_celery(get_settings())
app.conf.imports = ("workers.tasks",)

_ctx: WorkerContext | None = None


def context() -> WorkerContext:
    """This process's clients, built on first use."""
    global _ctx
    if _ctx is None:
        s = get_settings()
        _ctx = WorkerContext(
            store=JobStore.from_url(s.redis_url, shard_size=s.shard_size, ttl_s=s.job_ttl_s),
            catalog=ModelCatalog(s.triton_grpc_url, s.model_repository),
            triton=TritonInference(
                s.triton_grpc_url,
                max_in_flight=s.triton_max_in_flight,
                timeout_s=s.triton_timeout_s,
            ),
        )
    return _ctx


@worker_process_init.connect
def _after_fork(**_: object) -> None:
    global _ctx
    _ctx = None  # never reuse a parent's sockets in a forked child
