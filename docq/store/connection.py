"""The Redis client of the job store: the one place where Redis errors become docq's.

Every command the store sends (plain, pipelined or a Lua script) goes through this client,
so a Redis failure anywhere in the store surfaces as `StoreUnavailable`, a RetryableError:
the API answers 503, a worker retries its shard. No raw `RedisError` leaves the store.
A write refused because Redis is at its maxmemory (policy noeviction: "OOM command not
allowed") is `StoreFull`, a StoreUnavailable whose message is docq's own: the store is full,
not down, and reads go on working.

A pipeline can ask for its writes to reach replicas before it returns (`replicated`): Redis
WAIT sent on the transaction's own connection, since WAIT counts the writes of the
connection that sends it. A master behind Sentinels (a sentinel:// URL, sentinel.py) is
reached through the same client class, so its failures translate alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.client import Pipeline
from redis.commands.core import Script
from redis.exceptions import NoScriptError, OutOfMemoryError
from redis.retry import Retry

from docq.config import Settings
from docq.errors import NotReplicated, StoreFull, StoreUnavailable
from docq.store import sentinel

LUA = Path(__file__).resolve().parent / "lua"

# Redis refuses a write once its used memory, the write's own buffers included, passes
# maxmemory, so a little below the limit an upload (a shard is kilobytes to megabytes) is
# refused already, while a tiny write may still pass: from this fraction on the store is
# reported full (/readyz), rather than flickering between full and not at the limit itself.
FULL_AT = 0.98
# redis-py 8 retries a command that timed out or lost its connection 10 times by default
# (redis/_defaults.py): across a silent host, 11 socket timeouts, where redis_socket_timeout_s
# promises one (uploads hung 20 s and more with the master's host partitioned away, issue
# 41's fleet). One retry is what a failover needs: a pooled connection to the old master
# fails once, and the retry asks the Sentinels for the new one.
RETRY = Retry(ExponentialWithJitterBackoff(base=0.01, cap=1), 1)


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except NoScriptError:  # redis-py loads the script and retries by itself
        raise
    except OutOfMemoryError as exc:  # a MULTI with one refused command applies none of them
        raise StoreFull(
            "the job store is full and accepts no new work until jobs expire or it is given "
            "more memory; retry later",
            {"retry_after_s": StoreFull.retry_after_s},
        ) from exc
    except redis.RedisError as exc:
        raise StoreUnavailable("job store unavailable", f"{type(exc).__name__}: {exc}") from exc


class _StorePipeline(Pipeline):  # type: ignore[misc]
    _replicas = 0
    _replica_timeout_ms = 0

    def replicated(self, replicas: int, timeout_ms: int) -> _StorePipeline:
        """Make execute() wait until `replicas` replicas have the transaction's writes, or
        raise NotReplicated after `timeout_ms` (the writes stay on the master: the caller
        removes them). 0 replicas: return as soon as the master has them."""
        self._replicas, self._replica_timeout_ms = replicas, timeout_ms
        return self

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        with _translated():
            return super().execute(raise_on_error)  # type: ignore[no-any-return]

    def _execute_transaction(self, connection: Any, commands: Any, raise_on_error: bool) -> Any:
        replies = super()._execute_transaction(connection, commands, raise_on_error)
        if self._replicas > 0:  # before execute() hands the connection back to the pool
            connection.send_command("WAIT", self._replicas, self._replica_timeout_ms)
            acked = int(connection.read_response())
            if acked < self._replicas:
                raise NotReplicated(
                    "the job store's replicas did not confirm the write in time; retry later",
                    {
                        "replicas": acked,
                        "needed": self._replicas,
                        "retry_after_s": NotReplicated.retry_after_s,
                    },
                )
        return replies


def replicated(p: Pipeline, replicas: int, timeout_ms: int) -> Pipeline:
    """`p` (a pipeline of the store's client), made to wait for `replicas` replicas as it
    executes (_StorePipeline.replicated)."""
    if isinstance(p, _StorePipeline):
        return p.replicated(replicas, timeout_ms)
    if replicas:
        raise TypeError("only the store's own pipelines (StoreRedis) wait for replicas")
    return p


class StoreRedis(redis.Redis):  # type: ignore[misc]
    """A redis-py client whose failures raise StoreUnavailable."""

    def execute_command(self, *args: Any, **options: Any) -> Any:
        with _translated():
            return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> _StorePipeline:
        return _StorePipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )


def connect(url: str, *, sentinel_master: str = "docq", socket_timeout: float = 30) -> StoreRedis:
    """A client (and its connection pool) for the store at `url`; connects lazily.

    `url`: redis:// (one Redis) or sentinel:// (the master that the Sentinels name
    `sentinel_master`); `socket_timeout`: the longest one command or connect may take."""
    client = plain(url, StoreRedis, sentinel_master=sentinel_master, socket_timeout=socket_timeout)
    assert isinstance(client, StoreRedis)  # both builders build the class they are given
    return client


def from_settings(s: Settings) -> StoreRedis:
    """The store's client a docq process makes: redis_url, through its Sentinels if it
    names them, with the settings' socket timeout."""
    return connect(
        s.redis_url,
        sentinel_master=s.redis_sentinel_master,
        socket_timeout=s.redis_socket_timeout_s,
    )


def plain(
    url: str,
    redis_class: type[redis.Redis] = redis.Redis,
    *,
    sentinel_master: str = "docq",
    socket_timeout: float = 30,
) -> redis.Redis:
    """A `redis_class` client of the Redis (or Sentinels' master) at `url`, for readers
    outside the store (the broker's queue depths) that handle RedisError themselves."""
    if sentinel.is_sentinel(url):
        return sentinel.master_client(
            url,
            sentinel_master,
            redis_class,
            socket_timeout=socket_timeout,
            health_check_interval=30,
            retry=RETRY,
        )
    return redis_class.from_url(
        url, socket_timeout=socket_timeout, health_check_interval=30, retry=RETRY
    )


@cache
def lua(name: str) -> str:
    """The source of lua/<name>.lua; scripts that make a job final get open_event first
    (Lua scripts in Redis cannot include one another)."""
    source = (LUA / f"{name}.lua").read_text()
    if "open_event(" in source and name != "open_event":
        source = lua("open_event") + source
    return source


def script(client: redis.Redis, name: str) -> Script:
    """lua/<name>.lua registered on `client` (sent by hash; loaded on first use)."""
    return client.register_script(lua(name))


@dataclass(frozen=True, slots=True)
class StoreMemory:
    """How much memory the store's Redis uses, against its maxmemory (0: no limit)."""

    used_bytes: int
    max_bytes: int

    @property
    def full(self) -> bool:
        """Whether Redis is at its limit, where it refuses writes (policy noeviction)."""
        return self.max_bytes > 0 and self.used_bytes >= FULL_AT * self.max_bytes


def memory(client: redis.Redis) -> StoreMemory:
    """The store's memory now (INFO memory, which Redis answers even when full)."""
    info = client.info("memory")
    return StoreMemory(int(info["used_memory"]), int(info["maxmemory"]))
