"""The webhook fields of an upload in every format, the SSRF guard at upload, the tenant's
default webhook, and `/v1/jobs/{id}/webhook` (no worker needed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from fastapi.testclient import TestClient

from docq import keys
from docq.config import Settings
from docq.queue import CPU_QUEUE, PRIORITY_QUEUE, consumed_queues
from docq.store import Document, JobStore, WebhookTarget
from docq.webhook_guard import generate_secret
from tests.conftest import TENANT, tenant_headers

GOOD = {"id": "a", "text": "INVOICE No. 1 Total due 10.00 EUR"}
HOOK_URL = "http://127.0.0.1:9/hooks"  # allowed: the session settings allow private networks
SECRET = generate_secret()


@contextmanager
def app_with(settings: Settings, **changes: object) -> Iterator[TestClient]:
    """An API whose settings differ from the session's."""
    from api.main import create_app

    changed = settings.model_copy(update=changes)
    with TestClient(create_app(changed), headers=tenant_headers(changed)) as client:
        yield client


@pytest.fixture
def nothing_created(redis_url: str, settings: Settings) -> Iterator[None]:
    # Workers of the session may be finishing other jobs meanwhile (writing their results
    # and webhook attempts): look for new job records only.
    r = redis.Redis.from_url(redis_url)
    shard_queues = [PRIORITY_QUEUE, *consumed_queues([CPU_QUEUE], settings.bulk_lanes)]

    def queued() -> int:
        return sum(int(r.llen(q)) for q in shard_queues)

    before, waiting = set(r.keys("docq:job:{*}")), queued()
    yield
    assert set(r.keys("docq:job:{*}")) - before == set(), "a refused upload created a job"
    assert queued() <= waiting, "a refused upload enqueued tasks"


def error_of(resp) -> dict:
    body = resp.json()
    assert set(body) == {"error"}
    return body["error"]


def test_json_webhook_with_a_secret(api: TestClient) -> None:
    resp = api.post(
        "/v1/jobs", json={"documents": [GOOD], "webhook": {"url": HOOK_URL, "secret": SECRET}}
    )
    assert resp.status_code == 202, resp.text
    assert resp.json()["webhook"] == {"url": HOOK_URL, "secret": None}
    hook = api.get(f"/v1/jobs/{resp.json()['id']}/webhook").json()
    assert hook["url"] == HOOK_URL
    assert hook["webhook_id"] == f"msg_{resp.json()['id']}"
    assert hook["state"] in ("waiting", "pending", "delivered", "failed", "dead_lettered")
    assert SECRET not in str(hook)


def test_ndjson_webhook_in_query_parameters(api: TestClient) -> None:
    resp = api.post(
        "/v1/jobs",
        params={"model": "doc-type", "webhook_url": HOOK_URL},
        content=(json.dumps(GOOD) + "\n").encode(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert resp.status_code == 202, resp.text
    shown = resp.json()["webhook"]
    assert shown["url"] == HOOK_URL and shown["secret"].startswith("whsec_")
    assert api.get(f"/v1/jobs/{resp.json()['id']}/webhook").json()["url"] == HOOK_URL


def test_multipart_webhook_in_form_fields(api: TestClient) -> None:
    resp = api.post(
        "/v1/jobs",
        data={"model": "doc-type", "webhook_url": HOOK_URL, "webhook_secret": SECRET},
        files=[("files", ("a.txt", GOOD["text"].encode()))],
    )
    assert resp.status_code == 202, resp.text
    assert resp.json()["webhook"] == {"url": HOOK_URL, "secret": None}


def test_a_job_without_webhook_has_none(api: TestClient) -> None:
    created = api.post("/v1/jobs", json={"documents": [GOOD]}).json()
    assert created["webhook"] is None
    resp = api.get(f"/v1/jobs/{created['id']}/webhook")
    assert resp.status_code == 404
    assert "no webhook" in error_of(resp)["message"]
    assert api.get("/v1/jobs/missing/webhook").status_code == 404
    assert api.post("/v1/jobs/missing/webhook/redeliver").status_code == 404


@pytest.mark.usefixtures("nothing_created")
@pytest.mark.parametrize(
    ("webhook", "field"),
    [
        ({"url": "ftp://127.0.0.1/x"}, "scheme"),
        ({"url": "file:///etc/passwd"}, "scheme"),
        ({"url": "http://user:pw@127.0.0.1/x"}, "credentials"),
        ({"url": HOOK_URL, "secret": "hunter2"}, "secret"),
        ({"url": "https://no-such-host.invalid/x"}, "resolve"),
    ],
)
def test_unusable_webhooks_are_refused_and_create_nothing(
    api: TestClient, webhook: dict, field: str
) -> None:
    resp = api.post("/v1/jobs", json={"documents": [GOOD], "webhook": webhook})
    assert resp.status_code == 422
    err = error_of(resp)
    assert err["code"] == "webhook_refused"
    assert field in err["message"]


@pytest.mark.usefixtures("nothing_created")
def test_malformed_webhook_object_is_422(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"documents": [GOOD], "webhook": {"secret": SECRET}})
    assert resp.status_code == 422
    assert error_of(resp)["detail"]["errors"][0]["loc"] == ["webhook", "url"]


@pytest.mark.usefixtures("nothing_created")
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hooks",
        "http://localhost/hooks",
        "http://[::1]/h",
        "http://10.0.0.1/h",
    ],
)
def test_private_addresses_are_refused_without_the_allow_setting(
    settings: Settings, url: str
) -> None:
    with app_with(settings, webhook_allow_private_networks=False) as api:
        resp = api.post("/v1/jobs", json={"documents": [GOOD], "webhook": {"url": url}})
        assert resp.status_code == 422
        err = error_of(resp)
        assert err["code"] == "webhook_refused"
        assert "non-public" in err["message"]
        ndjson = api.post(
            "/v1/jobs",
            params={"webhook_url": url},
            content=(json.dumps(GOOD) + "\n").encode(),
            headers={"content-type": "application/x-ndjson"},
        )
        assert ndjson.status_code == 422


def test_the_tenant_default_webhook_applies_to_jobs_without_their_own(
    settings: Settings,
) -> None:
    default = "http://127.0.0.1:9/tenant"
    with app_with(settings, webhook_url=default, webhook_secret=SECRET) as api:
        created = api.post("/v1/jobs", json={"documents": [GOOD]}).json()
        assert created["webhook"] == {"url": default, "secret": None}  # never shown
        assert api.get(f"/v1/jobs/{created['id']}/webhook").json()["url"] == default
        own = api.post("/v1/jobs", json={"documents": [GOOD], "webhook": {"url": HOOK_URL}}).json()
        assert own["webhook"]["url"] == HOOK_URL  # the job's own wins


def test_redeliver_needs_a_final_job(api: TestClient, redis_url: str) -> None:
    store = JobStore.from_url(redis_url, shard_size=4, ttl_s=600)
    job = store.create_job(  # never enqueued: it stays queued
        "doc-type", [Document("a", "x")], webhook=WebhookTarget(HOOK_URL, SECRET), tenant=TENANT
    )
    resp = api.post(f"/v1/jobs/{job.id}/webhook/redeliver")
    assert resp.status_code == 409
    assert error_of(resp)["code"] == "conflict"
    hook = api.get(f"/v1/jobs/{job.id}/webhook").json()
    assert (hook["state"], hook["event"], hook["attempts"]) == ("waiting", None, [])


def test_redeliver_while_a_delivery_is_pending_is_409(api: TestClient, redis_url: str) -> None:
    store = JobStore.from_url(redis_url, shard_size=4, ttl_s=600)
    job = store.create_job(
        "doc-type", [Document("a", "x")], webhook=WebhookTarget(HOOK_URL, SECRET), tenant=TENANT
    )
    store.finish_shard(job.id, 0, [(0, {"id": "a", "label": "invoice"})])
    store.deliveries.claim_attempt(job.id, "a-live-chain", 30)  # as if an attempt were running
    resp = api.post(f"/v1/jobs/{job.id}/webhook/redeliver")
    assert resp.status_code == 409
    assert "still being delivered" in error_of(resp)["message"]


def test_a_redelivered_event_is_audited_again_until_settled(
    api: TestClient, redis_url: str
) -> None:
    """A settled event's job is no longer audited; its redelivery is a new round, which
    the audits watch again (workers/audit.py), so a lost message of it is found too."""
    store = JobStore.from_url(redis_url, shard_size=4, ttl_s=600)
    job = store.create_job(
        "doc-type", [Document("a", "x")], webhook=WebhookTarget(HOOK_URL, SECRET), tenant=TENANT
    )
    store.finish_shard(job.id, 0, [(0, {"id": "a", "label": "invoice"})])
    r = redis.Redis.from_url(redis_url)
    r.hset(keys.webhook(job.id), "state", "dead_lettered")
    store.recovery.retire(job.id)
    assert api.post(f"/v1/jobs/{job.id}/webhook/redeliver").status_code == 202
    assert r.zscore(keys.active(), job.id) is not None
