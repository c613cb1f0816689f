"""The broker down while the job store is up (each its own redis-server, as
`DOCQ_BROKER_URL` allows): an upload that cannot be enqueued creates no job and answers 503
with Retry-After (the client sends it again; nothing accepted waits on a sweeper), reads go
on, and a DELETE cancels but answers 503 asking to be repeated, because the job's event
could not be enqueued. Once the broker is back, with no DELETE repeated, the event is sent
all the same (a shard message of the cancelled job finds it final and dispatches it), the
job accepted before the outage completes, and the repeated DELETE answers 200 without a
second event.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
import redis
from fastapi.testclient import TestClient
from standardwebhooks import Webhook

from devstack.services import celery_worker, free_port, redis_server
from docq.config import Settings
from tests.conftest import settings_env, tenant_headers
from tests.support.jobs import wait_until_final
from tests.support.receiver import Receiver

pytestmark = [pytest.mark.e2e]

SECRET = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="


def unavailable(response: httpx.Response, took_s: float) -> dict[str, object]:
    """A prompt 503 with docq's JSON error body and a Retry-After; returns the error."""
    assert response.status_code == 503, response.text
    assert took_s < 15
    assert response.headers["content-type"].startswith("application/json")
    assert int(response.headers["retry-after"]) > 0
    return response.json()["error"]  # type: ignore[no-any-return]


def job_records(r: redis.Redis) -> set[bytes]:
    return set(r.keys("docq:job:{*}"))


@pytest.mark.timeout(300)
def test_broker_down_store_up_upload_creates_nothing_and_delete_asks_to_repeat(
    tmp_path: Path, settings: Settings
) -> None:
    from api.main import create_app

    broker_dir, broker_port = tmp_path / "broker", free_port()
    receiver = Receiver(200)
    with (
        redis_server(tmp_path / "store") as store_url,
        receiver.serve() as url,
    ):
        s = settings.model_copy(
            update={"redis_url": store_url, "broker_url": f"redis://127.0.0.1:{broker_port}/0"}
        )
        store = redis.Redis.from_url(store_url)
        hook = {"url": url, "secret": SECRET}
        bulk = [{"id": f"d{i}", "text": f"invoice {i}"} for i in range(20)]
        with TestClient(create_app(s), headers=tenant_headers(s)) as api:
            with redis_server(broker_dir, port=broker_port):
                before = api.post("/v1/jobs", json={"documents": bulk[:3]}).json()["id"]
                cancel = api.post("/v1/jobs", json={"documents": bulk, "webhook": hook})
                cancelled = cancel.json()["id"]
            # the broker is down (stopped; its append-only file keeps what it took)
            jobs = job_records(store)
            started = time.monotonic()
            refused = api.post("/v1/jobs", json={"documents": bulk[:3]})
            error = unavailable(refused, time.monotonic() - started)
            assert error["code"] == "queue_unavailable", error
            assert "nothing was stored" in str(error["message"])
            assert job_records(store) == jobs  # no job it cannot enqueue
            assert store.zcard("docq:unenqueued") == 0  # nor one left for the sweeper
            assert api.get(f"/v1/jobs/{before}").json()["status"] == "queued"  # reads go on

            started = time.monotonic()
            error = unavailable(api.delete(f"/v1/jobs/{cancelled}"), time.monotonic() - started)
            assert "repeat the DELETE" in str(error["message"])
            assert api.get(f"/v1/jobs/{cancelled}").json()["status"] == "cancelled"

            env = settings_env(s)
            with (
                redis_server(broker_dir, port=broker_port),  # back, on its data
                celery_worker(env, tmp_path / "worker.log", "cpu,cpu-priority", "shards"),
                celery_worker(env, tmp_path / "webhooks.log", "webhooks", pool="prefork"),
            ):
                done, _ = wait_until_final(api, before, timeout=120)
                receiver.wait_for(lambda got: len(got) >= 1, 60)  # with no DELETE repeated
                again = api.delete(f"/v1/jobs/{cancelled}")
                time.sleep(3)  # a second event, if one were coming, would come by now
                assert api.post("/v1/jobs", json={"documents": bulk[:3]}).status_code == 202

    assert done["status"] == "succeeded"  # accepted before the outage, done after it
    assert again.status_code == 200
    assert again.json()["status"] == "cancelled"
    (event,) = receiver.requests  # once, though DELETE came twice
    assert Webhook(SECRET).verify(event.body, event.headers)["type"] == "job.cancelled"
