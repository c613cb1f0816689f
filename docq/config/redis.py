"""Settings: Redis, the job store and Celery's broker, and its topology (issue 22): one Redis
(the default), or a master with a replica behind three Sentinels, which survives losing the
master's host.

With Sentinels, redis_url (and broker_url) take kombu's form
`sentinel://[:password@]host:port;sentinel://host:port;sentinel://host:port/db`: the job
store (docq/store/sentinel.py), Celery's broker and Flower (docq/queue.py) ask the Sentinels
for the master at each new connection, so after a failover they reach the new one with no
restart, for one more round trip per connection and three more processes to run. The URL's
password is the master's and the Sentinels' (requirepass on both).

Why WAIT after an upload's transaction and not `min-replicas-to-write 1` on the master: the
latter only refuses writes while no replica has been heard from for min-replicas-max-lag
seconds, so a write it takes may still be lost with the master; WAIT returns once a replica
has this very write, and only the upload (what a 202 promises) pays its round trip.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Redis(BaseModel):
    """Settings: where Redis is, its topology and what an upload waits for."""

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Job store (holds documents until their shard is done: size it for the "
        "largest backlog you accept): redis://, or sentinel:// Sentinels (docq/config/redis.py).",
    )
    broker_url: str | None = Field(
        None,
        description="Celery broker; defaults to redis_url. A separate Redis isolates "
        "queue traffic from job-store traffic.",
    )
    redis_mode: Literal["single", "sentinel"] = Field(
        "single",
        description="The Redis `make up` starts (devstack/stack.py): `single`, one "
        "redis-server; `sentinel`, a master, a replica and three Sentinels on loopback, with "
        "every process pointed at the Sentinels and uploads waiting for the replica. "
        "Sentinel rides out a Redis crash in seconds, for one more copy of the data in "
        "memory and four more processes.",
    )
    redis_sentinel_master: str = Field(
        "docq",
        description="With a sentinel:// redis_url or broker_url: the name the Sentinels "
        "monitor the master under (`sentinel monitor NAME ...`).",
    )
    redis_wait_replicas: int = Field(
        0,
        ge=0,
        description="Replicas that must have an upload's writes (Redis WAIT) before it is "
        "answered 202; an upload they do not confirm within redis_wait_timeout_ms gets 503 "
        "and is removed. 1 with a replica: a 202'd job survives losing the master's host, "
        "for one replication round trip per upload, and uploads stop while no replica is "
        "connected. 0: the master's word (a single Redis).",
    )
    redis_wait_timeout_ms: int = Field(
        2000,
        ge=1,
        description="Longest an upload waits for redis_wait_replicas. Longer rides out a "
        "replica that lags under load; shorter answers 503 sooner when none is there.",
    )
    redis_socket_timeout_s: float = Field(
        30.0,
        gt=0,
        description="Longest one Redis command (and connect) may take before it fails as "
        "unavailable: what bounds an answer when the master's host stops answering without "
        "closing connections. Shorter answers 503 sooner; too short fails the slowest "
        "legitimate commands (a large upload's transaction).",
    )
