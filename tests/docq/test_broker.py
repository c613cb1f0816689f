"""docq.broker: a channel whose broker connection kombu closed under it fails as a lost
connection, which Celery recovers from, not as an AttributeError, which stops a worker's
consumer for good (issue 41). Real kombu channels on a real redis-server, through docq's
own Celery app; the sequence is the one Celery's consumer runs when it loses its broker
(celery/worker/consumer/consumer.py, `on_connection_error_after_connected`): the connection
is collected, then its channels are closed."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu import Consumer, Exchange, Producer, Queue
from kombu.common import ignore_errors

from devstack.services import redis_server
from docq.config import Settings
from docq.errors import QueueUnavailable
from docq.queue import CPU_QUEUE, _broker, make_celery

QUEUE = Queue("held", routing_key="held")


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as url:
        yield url


def held_message(url: str, *, default: bool = False):  # type: ignore[no-untyped-def]
    """docq's broker connection, a channel of it and a message taken but not acknowledged
    on that channel, as a worker holds the shard it runs."""
    app = make_celery(Settings(redis_url=url))
    with app.connection_for_write() as conn:
        Producer(conn).publish({"shard": 1}, routing_key="held", declare=[QUEUE])
    conn = app.connection_for_read()
    channel = conn.default_channel if default else conn.channel()
    message = channel.basic_get("held", no_ack=False)
    assert message is not None
    return conn, channel, message


def test_a_consumer_that_lost_its_broker_closes_and_rejects_as_a_lost_connection(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker's connection as Celery's consumer holds it: the task channel waits in BRPOP
    with a shard taken and unacknowledged, and a second channel consumes a broadcast queue
    (Celery's remote control). The broker dies. Celery collects the connection, then closes
    it (`on_connection_error_after_connected`). The collect closes the broadcast channel
    first, which fails (its queue's delete needs the broker) and leaves the task channel
    half closed (its BRPOP read failed); the close closes the task channel again, and kombu
    rebuilt its pool, to hand the shard back, from the collected connection's client, None:
    "'NoneType' object has no attribute 'hostname'", which escaped `ignore_errors` and
    stopped the consumer for good (issue 41). The task that ran across it is then rejected
    on its old channel, which raised the same. Both must be connection errors, absorbed."""
    conn, channel, message = held_message(url, default=True)
    Consumer(channel, [Queue("idle", routing_key="idle")], callbacks=[]).consume()
    with pytest.raises(socket.timeout):
        conn.drain_events(timeout=0.3)  # BRPOP sent, its answer not read yet
    control = conn.channel()
    broadcast = Queue("control", Exchange("control", "fanout"), auto_delete=True)
    Consumer(control, [broadcast], callbacks=[]).consume()
    redis.Redis.from_url(url).shutdown(nosave=True)

    conn.collect()
    ignore_errors(conn, conn.close)
    message.reject_log_error(logging.getLogger("test"), conn.connection_errors)
    assert "Couldn't reject" in caplog.text


def test_a_publish_on_a_channel_kombu_closed_is_the_broker_unavailable(url: str) -> None:
    """The API's publisher on a channel that a failover's close left behind (the 5-minute
    fleet run once answered an upload 500 from it): 503, retryable. An AttributeError of
    docq's own is still a bug and stays one."""
    conn = make_celery(Settings(redis_url=url)).connection_for_write()
    channel = conn.channel()
    producer = Producer(channel)
    channel.close()
    with pytest.raises(QueueUnavailable), _broker("a shard"):
        producer.publish({"n": 1}, routing_key=CPU_QUEUE)
    with pytest.raises(AttributeError), _broker("a shard"):
        object().client  # type: ignore[attr-defined]  # noqa: B018
    conn.close()
