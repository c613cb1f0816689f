"""A webhooks worker SIGKILLed after a failed attempt, while its retry is not yet due: the
event reaches the receiver within its backoff plus 60 s, not after the broker's visibility
timeout (an hour, left at its default here).

A retry waits in the job store's schedule, not in the worker that failed the attempt (no
message is held unacknowledged meanwhile), so the kill takes nothing along: a sweeper
enqueues the delivery when it is due (workers/retries.py), and the webhooks worker a
supervisor starts in its place delivers it.

A shard worker SIGKILLed between making a job final and enqueueing its event: the audits
enqueue the event within a minute, once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from standardwebhooks import Webhook

from devstack.services import celery_worker, redis_server
from docq.config import Settings
from docq.jobs import DeliveryState
from docq.queue import delivery_of
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.polling import until
from tests.support.receiver import Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

DELIVERED = DeliveryState.DELIVERED
BACKOFF_S = 8.0  # the retry the worker holds is due this long after the failed attempt


@pytest.fixture
def hook_settings(tmp_path: Path, settings: Settings) -> Iterator[Settings]:
    """The session's settings on a Redis of its own, a retry 8 s after a failed attempt,
    an enqueued delivery looked at again 5 s later, and a sweep every second."""
    with redis_server(tmp_path / "redis") as redis_url:
        yield settings.model_copy(
            update={
                "redis_url": redis_url,
                "webhook_backoff_s": BACKOFF_S,
                "webhook_backoff_max_s": BACKOFF_S,
                "webhook_stall_s": 5.0,
                "sweep_interval_s": 1.0,
            }
        )


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a worker and its prefork children, as the OOM killer or a node loss would."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    os.kill(proc.pid, signal.SIGKILL)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):  # it died with its parent
            os.kill(int(pid), signal.SIGKILL)
    proc.wait(30)


def held_deliveries(r: redis.Redis, job_id: str) -> int:
    """Webhook messages of the job that a worker holds unacknowledged."""
    held = [json.loads(raw)[0] for raw in r.hvals("unacked")]
    return sum(1 for m in held if (d := delivery_of(m)) and d[0] == job_id)


@pytest.mark.timeout(300)
def test_a_webhooks_worker_killed_before_its_retry_is_due_delivers_within_backoff_plus_60s(
    hook_settings: Settings, tmp_path: Path
) -> None:
    from api.main import create_app

    env = settings_env(hook_settings)
    r = redis.Redis.from_url(hook_settings.redis_url)
    store = JobStore.from_url(hook_settings.redis_url, shard_size=8, ttl_s=3600)
    receiver = Receiver(503, 200)
    secret = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="
    with (
        receiver.serve() as url,
        TestClient(create_app(hook_settings), headers=tenant_headers(hook_settings)) as api,
        celery_worker(env, tmp_path / "shards.log", "cpu,cpu-priority", "shards"),
    ):
        victim_log = tmp_path / "victim.log"
        with celery_worker(env, victim_log, "webhooks", "victim", pool="prefork") as victim:
            docs = [{"id": "a", "text": "invoice total due"}, {"id": "b", "text": "receipt"}]
            job_id = api.post(
                "/v1/jobs", json={"documents": docs, "webhook": {"url": url, "secret": secret}}
            ).json()["id"]
            receiver.wait_for(lambda got: len(got) == 1, 120)  # the 503
            failed_at = time.monotonic()
            # The failed attempt's message is acknowledged once its task returns; the retry
            # waits in the schedule, not in the worker.
            until(lambda: held_deliveries(r, job_id) == 0, "the failed attempt acknowledged", 10)
            assert store.deliveries.progress(job_id).next_at > time.time()  # not yet due
            assert store.deliveries.scheduled(job_id)
            kill_tree(victim)
        assert r.llen("webhooks") == 0  # nothing queued before it is due

        # a supervisor starts another webhooks worker at once
        with celery_worker(env, tmp_path / "webhooks.log", "webhooks", "next", pool="prefork"):
            receiver.wait_for(lambda got: len(got) == 2, BACKOFF_S * 1.25 + 60)
            delivered_after = time.monotonic() - failed_at
            until(lambda: store.deliveries.progress(job_id).state is DELIVERED, "delivered")
        hook = api.get(f"/v1/jobs/{job_id}/webhook").json()

    assert delivered_after <= BACKOFF_S * 1.25 + 60  # backoff (with its jitter) plus 60 s
    assert [a["status_code"] for a in hook["attempts"]] == [503, 200]
    assert [q.answered for q in receiver.requests] == [503, 200]  # sent once after the kill
    assert {q.headers["webhook-id"] for q in receiver.requests} == {f"msg_{job_id}"}
    for q in receiver.requests:
        assert Webhook(secret).verify(q.body, q.headers)["data"]["id"] == job_id
    assert held_deliveries(r, job_id) == 0  # nothing left for the visibility timeout
    assert "its webhook attempt is due; enqueued" in (tmp_path / "shards.log").read_text()


# The shard worker dies the moment it would enqueue the event of the job it made final.
DIES_AT_DISPATCH = (
    "import os, signal\n"
    "from docq import webhooks\n"
    "webhooks.dispatch = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
)


@pytest.mark.timeout(300)
def test_a_worker_killed_between_a_jobs_end_and_its_event_still_delivers_it_once(
    hook_settings: Settings, tmp_path: Path
) -> None:
    """The job is final and its event open, but never enqueued, and the shard's message is
    held by the dead worker, where no sweep restores it (its job is final): the audits find
    the event's message nowhere twice and enqueue it (workers/audit.py), within a minute
    rather than the broker's visibility timeout."""
    from api.main import create_app

    s = hook_settings.model_copy(update={"audit_interval_s": 2.0})
    env = settings_env(s)
    store = JobStore.from_url(s.redis_url, shard_size=8, ttl_s=3600)
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(DIES_AT_DISPATCH)
    receiver = Receiver(200)
    secret = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="
    with (
        receiver.serve() as url,
        TestClient(create_app(s), headers=tenant_headers(s)) as api,
        celery_worker(env, tmp_path / "webhooks.log", "webhooks", "hooks", pool="prefork"),
    ):
        dying = {**env, "PYTHONPATH": str(patch)}
        with celery_worker(dying, tmp_path / "dying.log", "cpu,cpu-priority", "dying") as victim:
            docs = [{"id": "a", "text": "invoice total due"}, {"id": "b", "text": "receipt"}]
            job_id = api.post(
                "/v1/jobs", json={"documents": docs, "webhook": {"url": url, "secret": secret}}
            ).json()["id"]
            assert victim.wait(120) == -signal.SIGKILL
        assert store.get_job(job_id).status.final
        assert store.deliveries.dispatch_state(job_id) == (DeliveryState.PENDING, None)
        died_at = time.monotonic()

        with celery_worker(env, tmp_path / "shards.log", "cpu,cpu-priority", "shards"):
            receiver.wait_for(lambda got: len(got) == 1, 60)
            delivered_after = time.monotonic() - died_at
            until(lambda: store.deliveries.progress(job_id).state is DELIVERED, "delivered")
            time.sleep(2 * s.audit_interval_s)  # another audit: it must not send again
        hook = api.get(f"/v1/jobs/{job_id}/webhook").json()

    assert delivered_after <= 60
    assert [q.answered for q in receiver.requests] == [200]
    assert [a["status_code"] for a in hook["attempts"]] == [200]
    assert Webhook(secret).verify(receiver.requests[0].body, receiver.requests[0].headers)
    assert "event never enqueued" in (tmp_path / "shards.log").read_text()
