"""`GET /metrics`: the API process's Prometheus metrics, and what it reads at scrape time.

The API counts what it does itself (jobs created and documents accepted by model,
api/submissions.py; model loads, docq.model_control). Queue depth and each Triton
endpoint's readiness are read when Prometheus scrapes, so they are right whichever
process enqueued or consumed: the length of each Celery queue (its Redis list, priority
sub-lists included), the messages taken by a worker but not yet acknowledged,
is_server_ready() of every endpoint, and the job store's memory against its maxmemory (at
the limit Redis refuses writes: uploads answer 503 store_full). Workers serve their own
metrics (workers/metrics.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import redis
from fastapi import APIRouter, Request
from fastapi.responses import Response
from kombu.transport.redis import Channel
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from docq.catalog import ModelCatalog
from docq.metrics import registry
from docq.queue import CPU_QUEUE, PRIORITY_QUEUE, WEBHOOKS_QUEUE, consumed_queues
from docq.store import JobStore, connection

log = logging.getLogger(__name__)

QUEUES = (CPU_QUEUE, PRIORITY_QUEUE, WEBHOOKS_QUEUE)
# kombu's Redis transport keeps a queue's messages of priority p > 0 in `queue + sep + p`
_PRIORITY_LISTS = [f"{Channel.sep}{p}" for p in Channel.priority_steps if p]

router = APIRouter(include_in_schema=False)


class QueueCollector(Collector):
    """Celery's queues in the broker, read at each scrape (one pipeline round trip). The
    bulk queue counts as one, `cpu`: its tenant lanes (`lanes` of them) summed."""

    def __init__(
        self, client: redis.Redis, queues: Sequence[str] = QUEUES, *, lanes: int = 0
    ) -> None:
        self.client = client
        self.queues = tuple(queues)
        self.lists = {q: consumed_queues([q], lanes) for q in self.queues}

    def collect(self) -> Iterable[Metric]:
        depth = GaugeMetricFamily(
            "docq_queue_messages",
            "Messages waiting in a Celery queue (shards, webhook deliveries), read from the "
            "broker at scrape time.",
            labels=["queue"],
        )
        unacked = GaugeMetricFamily(
            "docq_queue_unacked_messages",
            "Messages a worker has taken and not yet acknowledged (running or prefetched).",
            labels=[],
        )
        try:
            pipe = self.client.pipeline(transaction=False)
            for queue in self.queues:
                for name in self.lists[queue]:
                    for suffix in ("", *_PRIORITY_LISTS):
                        pipe.llen(name + suffix)
            pipe.hlen(Channel.unacked_key)
            counts = pipe.execute()
        except redis.RedisError as exc:  # no numbers rather than wrong ones; /readyz says why
            log.warning("queue depth unavailable: %s", exc)
            return
        per_list = len(_PRIORITY_LISTS) + 1
        start = 0
        for queue in self.queues:
            end = start + per_list * len(self.lists[queue])
            depth.add_metric([queue], sum(counts[start:end]))
            start = end
        unacked.add_metric([], counts[-1])
        yield depth
        yield unacked


class TritonCollector(Collector):
    """Each Triton endpoint's readiness, asked at each scrape."""

    def __init__(self, catalog: ModelCatalog) -> None:
        self.catalog = catalog

    def collect(self) -> Iterable[Metric]:
        ready = GaugeMetricFamily(
            "docq_triton_ready",
            "1 when the Triton endpoint answers ready to the API, else 0.",
            labels=["endpoint"],
        )
        for url, ok in self.catalog.endpoints_ready().items():
            ready.add_metric([url], 1 if ok else 0)
        yield ready


class StoreCollector(Collector):
    """The job store's memory (Redis INFO), read at each scrape."""

    def __init__(self, store: JobStore) -> None:
        self.store = store

    def collect(self) -> Iterable[Metric]:
        memory = self.store.memory()
        if memory is None:  # Redis down: no numbers rather than wrong ones; /readyz says so
            return
        yield GaugeMetricFamily(
            "docq_store_memory_used_bytes",
            "Memory the job store's Redis uses (INFO used_memory).",
            value=memory.used_bytes,
        )
        yield GaugeMetricFamily(
            "docq_store_memory_max_bytes",
            "The job store's maxmemory (0: no limit). Near it, Redis refuses writes and "
            "uploads answer 503 store_full.",
            value=memory.max_bytes,
        )


def scrape_registry(
    broker_url: str,
    catalog: ModelCatalog,
    store: JobStore,
    *,
    lanes: int,
    sentinel_master: str = "docq",
) -> CollectorRegistry:
    """The registry of what this API reads at scrape time (one per app: its own clients);
    `lanes`: the bulk_lanes setting; `sentinel_master`: the master's name when broker_url
    names Sentinels."""
    scraped = CollectorRegistry(auto_describe=False)
    # A scrape must not wait long: no numbers rather than a hung /metrics.
    client = connection.plain(broker_url, sentinel_master=sentinel_master, socket_timeout=2)
    scraped.register(QueueCollector(client, lanes=lanes))
    scraped.register(TritonCollector(catalog))
    scraped.register(StoreCollector(store))
    return scraped


@router.get("/metrics")
def metrics(request: Request) -> Response:
    """Prometheus' text format: the process's metrics, then the queues."""
    body = generate_latest(registry()) + generate_latest(request.app.state.scrape_registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
