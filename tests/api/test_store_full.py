"""A job store at maxmemory (issue 22): a real redis-server filled until it refuses writes
(policy noeviction). Uploads are refused with a 503 `store_full` that names no Redis
internals and leave nothing behind; existing jobs stay readable; /readyz and /metrics say
the store is full; once memory is free again the same upload is accepted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from devstack.services import redis_server
from docq.config import Settings
from tests.conftest import MODEL_REPOSITORY, tenant_headers

DOCS = [
    {"id": "a", "text": "INVOICE No. 1 Total due 10.00 EUR"},
    {"id": "b", "text": "RECEIPT thank you for your purchase"},
]
FILLER = "filler:"


def fill(r: redis.Redis) -> None:
    """Set maxmemory a little above what Redis uses, then write until it refuses: large
    values first, then small ones, so that even a small write is over the limit."""
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", int(r.info("memory")["used_memory"]) + 256 * 1024)
    for size in (16 * 1024, 1024, 64):
        for i in range(100_000):
            try:
                r.set(f"{FILLER}{size}:{i}", b"x" * size)
            except redis.exceptions.OutOfMemoryError:
                break
        else:
            pytest.fail(f"Redis took 100,000 values of {size} bytes without refusing one")
    # Then below what it uses now: the filling client's buffers, freed once it stops, count
    # in used_memory, so the store just filled could take a small upload again (seen: the
    # test's upload answered 202 about one run in three).
    r.config_set("maxmemory", max(1, int(r.info("memory")["used_memory"]) - 512 * 1024))


def keyspace(r: redis.Redis) -> dict[bytes, bytes | None]:
    """Every key but the fillers, with its serialized value: any write shows."""
    return {k: r.dump(k) for k in r.scan_iter() if not k.startswith(FILLER.encode())}


@pytest.fixture
def store_redis(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path / "redis") as url:
        yield url


@pytest.fixture
def api(store_redis: str, triton_url: str) -> Iterator[TestClient]:
    from api.main import create_app

    settings = Settings(
        redis_url=store_redis, triton_grpc_url=triton_url, model_repository=MODEL_REPOSITORY
    )
    with TestClient(create_app(settings), headers=tenant_headers(settings)) as client:
        yield client


def test_a_full_store_refuses_uploads_with_503_and_keeps_serving_reads(
    api: TestClient, store_redis: str
) -> None:
    r = redis.Redis.from_url(store_redis)
    assert api.get("/readyz").json()["checks"]["store_memory"] is True
    earlier = api.post("/v1/jobs", json={"model": "doc-type", "documents": DOCS})
    assert earlier.status_code == 202, earlier.text
    job_id = earlier.json()["id"]

    fill(r)
    before = keyspace(r)
    key = {"idempotency-key": "upload-while-full"}
    for headers in (key, {}, key):
        resp = api.post("/v1/jobs", json={"model": "doc-type", "documents": DOCS}, headers=headers)
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"] == "30"
        error = resp.json()["error"]
        assert error["code"] == "store_full"
        assert "job store is full" in error["message"]
        assert "OOM" not in resp.text and "command not allowed" not in resp.text
        # no job record, shard, task, webhook or Idempotency-Key claim: nothing at all
        assert keyspace(r) == before

    # what exists stays readable
    status = api.get(f"/v1/jobs/{job_id}")
    assert status.status_code == 200 and status.json()["status"] == "queued"
    assert api.get(f"/v1/jobs/{job_id}/results").status_code == 200

    ready = api.get("/readyz")
    assert ready.status_code == 200  # reads still work: stay in the load balancer
    body = ready.json()
    assert body["status"] == "degraded"
    assert body["checks"] == {"redis": True, "triton": True, "store_memory": False}
    assert body["store_memory"]["used_bytes"] >= 0.98 * body["store_memory"]["max_bytes"] > 0
    metrics = {
        line.split()[0]: float(line.split()[1])
        for line in api.get("/metrics").text.splitlines()
        if line.startswith("docq_store_memory_")
    }
    assert metrics["docq_store_memory_max_bytes"] == body["store_memory"]["max_bytes"]
    assert metrics["docq_store_memory_used_bytes"] >= 0.98 * metrics["docq_store_memory_max_bytes"]

    # memory given back (what an operator does): the same upload with the same key is
    # accepted, so no claim was held
    r.delete(*r.keys(f"{FILLER}*"))
    r.config_set("maxmemory", 0)
    assert api.get("/readyz").json()["status"] == "ok"
    again = api.post("/v1/jobs", json={"model": "doc-type", "documents": DOCS}, headers=key)
    assert again.status_code == 202, again.text
