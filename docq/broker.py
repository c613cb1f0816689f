"""kombu's Redis transports, with one fix: a channel whose broker connection kombu closed
under it fails as a lost connection, which Celery and kombu recover from.

Why: when Celery's consumer loses its broker connection (a Redis master killed behind
Sentinels), it calls `Connection.collect()` and then `close()` (celery/worker/consumer/
consumer.py, `on_connection_error_after_connected`). `collect` sets the transport's `client`
to None; a channel that the first close could not finish (its BRPOP read failed on the dead
socket) is closed again, drops its pool, and, to hand its unacknowledged messages back,
builds a new pool from `self.connection.client`: `AttributeError: 'NoneType' object has no
attribute 'hostname'` (kombu/transport/redis.py, `_connparams`). The same happens when a task
that ran across the failover is acknowledged or rejected on its old channel, and when a
producer publishes on a channel its connection's close left behind (`... 'client'`). Celery
treats an AttributeError as a bug, not a lost connection: "Unrecoverable error", the
consumer is gone, and the worker stays alive and reads nothing more (issue 41; the stall
guard, workers/stall.py, only ends such a worker for a supervisor to restart).

Raised as `redis.ConnectionError` instead, every one of these callers already does the right
thing: `ignore_errors` finishes the reconnect and the consumer reads again, `ack_log_error` /
`reject_log_error` log it (the message stays in Redis's unacknowledged set, and the shard's
lease and the sweeper run it again), and a publish is retried on a fresh channel. Installed
by `install()` under kombu's own transport names (`redis`, `rediss`, `sentinel`), before
any connection resolves them (kombu caches a resolved name): a failover's
`Connection.switch` resolves the transport again from the URL's scheme, so an explicit
`broker_transport` would be lost at the first failover.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class _ClosedConnectionIsLost:
    """Mixed into kombu's Redis channels (see the module's docstring)."""

    connection: Any  # the kombu Transport; None once kombu closed the channel

    def _get_pool(self, asynchronous: bool = False) -> Any:
        transport = self.connection
        if transport is None or transport.client is None:
            raise RedisConnectionError("kombu closed this channel's broker connection")
        return super()._get_pool(asynchronous)  # type: ignore[misc]


class Channel(_ClosedConnectionIsLost, kombu_redis.Channel):
    pass


class SentinelChannel(_ClosedConnectionIsLost, kombu_redis.SentinelChannel):
    pass


class Transport(kombu_redis.Transport):
    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel


def install() -> None:
    """Make `redis://` and `sentinel://` broker URLs use these transports in this process."""
    TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = f"{__name__}:Transport"
    TRANSPORT_ALIASES["sentinel"] = f"{__name__}:SentinelTransport"
