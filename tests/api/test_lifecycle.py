"""The job lifecycle through the API: idempotent uploads, cancel, retention (no worker needed)."""

from __future__ import annotations

import json
import uuid

import redis
from fastapi.testclient import TestClient

from docq.config import Settings
from tests.api.test_webhooks import app_with
from tests.support.polling import until

DOCS = [
    {"id": "a", "text": "INVOICE No. 1 Total due 10.00 EUR"},
    {"id": "b", "text": "RECEIPT thank you for your purchase"},
]


def key() -> dict[str, str]:
    return {"idempotency-key": f"test-{uuid.uuid4()}"}


def test_same_key_same_request_returns_the_original_job(api: TestClient, redis_url: str) -> None:
    headers = key()
    body = {"model": "doc-type", "documents": DOCS, "webhook": {"url": "http://127.0.0.1:9/h"}}
    first = api.post("/v1/jobs", json=body, headers=headers)
    assert first.status_code == 202, first.text
    jobs_before = set(redis.Redis.from_url(redis_url).keys("docq:job:{*}"))

    again = api.post("/v1/jobs", json=body, headers=headers)
    assert again.status_code == 200  # a replay, not a new job
    assert again.json()["id"] == first.json()["id"]
    # a client that lost the first answer gets the generated secret from the replay
    assert again.json()["webhook"] == first.json()["webhook"]

    # the same request in another format is the same request
    ndjson = api.post(
        "/v1/jobs",
        params={"model": "doc-type", "webhook_url": "http://127.0.0.1:9/h"},
        content="".join(json.dumps(d) + "\n" for d in DOCS).encode(),
        headers={**headers, "content-type": "application/x-ndjson"},
    )
    assert (ndjson.status_code, ndjson.json()["id"]) == (200, first.json()["id"])
    # model left out but the default is the same model: the same request
    default_model = api.post("/v1/jobs", json={**body, "model": None}, headers=headers)
    assert default_model.json()["id"] == first.json()["id"]
    assert set(redis.Redis.from_url(redis_url).keys("docq:job:{*}")) <= jobs_before  # no new job


def test_same_key_different_request_is_409(api: TestClient, redis_url: str) -> None:
    headers = key()
    first = api.post("/v1/jobs", json={"documents": DOCS}, headers=headers)
    assert first.status_code == 202
    jobs_before = set(redis.Redis.from_url(redis_url).keys("docq:job:{*}"))
    changed = [
        {"documents": DOCS[:1]},
        {"documents": [DOCS[0], {**DOCS[1], "text": "RECEIPT changed"}]},
        {"documents": DOCS, "webhook": {"url": "http://127.0.0.1:9/h"}},
    ]
    for body in changed:
        resp = api.post("/v1/jobs", json=body, headers=headers)
        assert resp.status_code == 409
        error = resp.json()["error"]
        assert error["code"] == "idempotency_key_reused"
        assert first.json()["id"] not in resp.text  # a 409 names no job
    assert set(redis.Redis.from_url(redis_url).keys("docq:job:{*}")) <= jobs_before  # no new job
    # without a key, the same body is simply another job
    other = api.post("/v1/jobs", json={"documents": DOCS})
    assert other.status_code == 202 and other.json()["id"] != first.json()["id"]


def test_a_refused_upload_does_not_hold_its_key(api: TestClient) -> None:
    headers = key()
    bad = api.post("/v1/jobs", json={"model": "no-such-model", "documents": DOCS}, headers=headers)
    assert bad.status_code == 422
    good = api.post("/v1/jobs", json={"documents": DOCS}, headers=headers)
    assert good.status_code == 202


def test_an_invalid_key_is_422(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"documents": DOCS}, headers={"idempotency-key": "k" * 300})
    assert resp.status_code == 422


def test_cancel_is_idempotent_and_final_jobs_stay_as_they_are(api: TestClient) -> None:
    created = api.post("/v1/jobs", json={"documents": DOCS}).json()
    first = api.delete(f"/v1/jobs/{created['id']}")
    assert first.status_code == 200
    assert first.json()["status"] == "cancelled"
    assert first.json()["finished_at"] is not None
    second = api.delete(f"/v1/jobs/{created['id']}")
    assert second.json() == first.json()
    assert api.delete("/v1/jobs/missing").status_code == 404


def test_an_expired_job_answers_404_and_leaves_nothing(settings: Settings, redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    headers = key()
    with app_with(settings, job_ttl_s=1) as api:
        body = {"documents": DOCS, "webhook": {"url": "http://127.0.0.1:9/h"}}
        created = api.post("/v1/jobs", json=body, headers=headers).json()
        job_id = created["id"]
        assert api.get(f"/v1/jobs/{job_id}").status_code == 200
        until(lambda: api.get(f"/v1/jobs/{job_id}").status_code == 404, "the job to expire", 30)
        for resp in (
            api.get(f"/v1/jobs/{job_id}"),
            api.get(f"/v1/jobs/{job_id}/results"),
            api.get(f"/v1/jobs/{job_id}/webhook"),
            api.post(f"/v1/jobs/{job_id}/webhook/redeliver"),
            api.delete(f"/v1/jobs/{job_id}"),
        ):
            assert resp.status_code == 404
            assert resp.json()["error"]["code"] == "not_found"
        assert r.keys(f"docq:job:{{{job_id}}}*") == []
        # the Idempotency-Key expired with its job: the same request makes a new job
        replay = api.post("/v1/jobs", json=body, headers=headers)
        assert replay.status_code == 202
        assert replay.json()["id"] != job_id
