"""The Redis client of the job store: the one place where Redis errors become docq's.

Every command the store sends (plain, pipelined or a Lua script) goes through this client,
so a Redis failure anywhere in the store surfaces as `StoreUnavailable`, a RetryableError:
the API answers 503, a worker retries its shard. No raw `RedisError` leaves the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import redis
from redis.client import Pipeline
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from docq.errors import StoreUnavailable

LUA = Path(__file__).resolve().parent / "lua"


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except NoScriptError:  # redis-py loads the script and retries by itself
        raise
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
