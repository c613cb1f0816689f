"""The job store and the broker behind real Redis Sentinels (docq/store/sentinel.py,
docq/queue.py): a sentinel:// URL reaches the master, the same clients reach the new master
after a failover with no restart, and a write no replica confirms is refused and removed.

The failover is the Sentinels' own (`SENTINEL FAILOVER`, no kill: the kill is
tests/faults/test_faults_sentinel.py's); the topology is devstack's (services.redis_sentinels).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from devstack.sentinels import SentinelGroup, redis_sentinels
from docq import keys
from docq.config import Settings
from docq.errors import NotReplicated
from docq.queue import PROCESS_SHARD, make_celery
from docq.store import Document, open_store
from docq.store.sentinel import parse
from tests.support.polling import until


@pytest.fixture(scope="module")
def group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelGroup]:
    with redis_sentinels(tmp_path_factory.mktemp("sentinels")) as g:
        yield g


def direct(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=5)


def replica_port(group: SentinelGroup) -> int:
    master = group.master_port()
    return next(p for p in group.servers if p != master)


def test_the_url_form_is_kombus() -> None:
    url = "sentinel://:s3cr%40t@h1:26379;sentinel://h2;sentinel://h3:26381/2"
    parts = parse(url)
    assert parts.sentinels == (("h1", 26379), ("h2", 26379), ("h3", 26381))
    assert (parts.password, parts.db) == ("s3cr@t", 2)
    with pytest.raises(ValueError):
        parse("redis://h1:6379/0")


def test_the_store_and_the_broker_follow_a_failover_without_a_restart(
    group: SentinelGroup,
) -> None:
    s = Settings(redis_url=group.url, redis_wait_replicas=1)
    store, celery = open_store(s), make_celery(s)
    before = group.master_port()
    job = store.create_job("doc-type", [Document("a", "before the failover")])
    assert direct(before).exists(keys.job(job.id))

    direct(group.sentinel_ports[0]).execute_command("SENTINEL", "FAILOVER", "docq")
    until(lambda: group.master_port() not in (None, before), "a new master", 30)
    after = group.master_port()
    assert after is not None
    # The old master is now a replica of the new one: a client still talking to it would
    # read, and get READONLY on its writes. The same clients write to the new master.
    until(
        lambda: direct(before).info("replication")["role"] == "slave", "the old master demoted", 30
    )

    def moved() -> bool:
        try:
            return store.create_job("doc-type", [Document("b", "after")]) is not None
        except NotReplicated:  # the demoted master is still syncing from the new one
            return False

    until(moved, "an upload stored on the new master", 30)
    assert direct(after).exists(keys.job(job.id))  # the replica had it: WAIT said so
    with celery.producer_or_acquire() as producer:
        celery.send_task(PROCESS_SHARD, args=[job.id, 0], queue="sentinel-test", producer=producer)
    assert direct(after).llen("sentinel-test") == 1


def test_a_write_no_replica_confirms_is_refused_and_removed(group: SentinelGroup) -> None:
    s = Settings(redis_url=group.url, redis_wait_replicas=1, redis_wait_timeout_ms=300)
    store = open_store(s)
    master, replica = group.master_port(), replica_port(group)
    assert master is not None
    # The replica leaves (as when its host is lost): the master has none to confirm writes.
    direct(replica).replicaof("NO", "ONE")
    try:
        until(
            lambda: direct(master).info("replication")["connected_slaves"] == 0,
            "the replica gone",
            10,
        )
        with pytest.raises(NotReplicated) as refused:
            store.create_job("doc-type", [Document("a", "unconfirmed")], job_id="unconfirmed")
        assert refused.value.detail["replicas"] == 0
        # Nothing of it stays on the master: no half job for the sweeper to find.
        assert list(direct(master).scan_iter("*unconfirmed*")) == []
        assert direct(master).zscore(keys.unenqueued(), "unconfirmed") is None
    finally:
        direct(replica).replicaof("127.0.0.1", master)
    until(
        lambda: direct(master).info("replication").get("slave0", {}).get("state") == "online",
        "the replica back",
        30,
    )
    # Writes are taken again, at the default wait (2 s): the 300 ms above keeps the refusal
    # quick, but a replica just resynced on a busy 2-core box acked later than that (a CI run,
    # 2026-12-05), which is what the default's margin is for.
    store = open_store(Settings(redis_url=group.url, redis_wait_replicas=1))
    assert store.create_job("doc-type", [Document("a", "confirmed")]).documents == 1
