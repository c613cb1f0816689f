"""The Redis client of the job store: the one place where Redis errors become docq's.

Every command the store sends (plain, pipelined or a Lua script) goes through this client,
so a Redis failure anywhere in the store surfaces as `StoreUnavailable`, a RetryableError:
the API answers 503, a worker retries its shard. No raw `RedisError` leaves the store.
A write refused because Redis is at its maxmemory (policy noeviction: "OOM command not
allowed") is `StoreFull`, a StoreUnavailable whose message is docq's own: the store is full,
not down, and reads go on working.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import redis
from redis.client import Pipeline
from redis.commands.core import Script
from redis.exceptions import NoScriptError, OutOfMemoryError

from docq.errors import StoreFull, StoreUnavailable

LUA = Path(__file__).resolve().parent / "lua"

# Redis refuses a write once its used memory, the write's own buffers included, passes
# maxmemory, so a little below the limit an upload (a shard is kilobytes to megabytes) is
# refused already, while a tiny write may still pass: from this fraction on the store is
# reported full (/readyz), rather than flickering between full and not at the limit itself.
FULL_AT = 0.98


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
    def execute(self, raise_on_error: bool = True) -> list[Any]:
        with _translated():
            return super().execute(raise_on_error)  # type: ignore[no-any-return]


class StoreRedis(redis.Redis):  # type: ignore[misc]
    """A redis-py client whose failures raise StoreUnavailable."""

    def execute_command(self, *args: Any, **options: Any) -> Any:
        with _translated():
            return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> _StorePipeline:
        return _StorePipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )


def connect(url: str) -> StoreRedis:
    """A client (and its connection pool) for the store at `url`; connects lazily."""
    client = StoreRedis.from_url(url, socket_timeout=30, health_check_interval=30)
    assert isinstance(client, StoreRedis)  # from_url builds the class it is called on
    return client


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
