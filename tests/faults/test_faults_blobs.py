"""The blob store failing under the extract workers loses no document: the shard's task
is retried (Celery's retry, workers/tasks.py) with its files still referenced, and the job
finishes once the store is back, each document answered once and every blob deleted.

The store fails as a failing volume does (an unmounted or lost shared volume): its
directory is swapped for a file, so every read and write is an OSError
(BlobStoreUnavailable, retryable), then swapped back. An upload meanwhile is a 503
`blob_store_unavailable` that creates nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from devstack.services import celery_worker, redis_server, wait_for
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.files import INVOICE, pdf
from tests.support.jobs import all_results, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

FILES = 3
PDF = "application/pdf"


@pytest.fixture
def own_settings(tmp_path: Path, settings: Settings) -> Iterator[Settings]:
    with redis_server(tmp_path / "redis") as redis_url:
        yield settings.model_copy(
            update={
                "redis_url": redis_url,
                "blob_url": (tmp_path / "blobs").as_uri(),
                "task_retry_backoff_s": 1,
                "task_retry_backoff_max_s": 2,
            }
        )


def test_a_failing_store_is_retried_and_the_job_finishes_once_it_is_back(
    own_settings: Settings, tmp_path: Path
) -> None:
    from api.main import create_app

    env = settings_env(own_settings)
    root, away = tmp_path / "blobs", tmp_path / "blobs.away"
    data = base64.b64encode(pdf(INVOICE)).decode()
    docs = [
        {"id": f"f{i}.pdf", "content": data, "content_type": "application/pdf"}
        for i in range(FILES)
    ]
    with (
        TestClient(create_app(own_settings), headers=tenant_headers(own_settings)) as api,
        celery_worker(env, tmp_path / "bulk.log", "cpu,cpu-priority", "bulk", concurrency=2),
    ):
        created = api.post("/v1/jobs", json={"documents": docs})
        assert created.status_code == 202, created.text
        root.rename(away)
        root.write_bytes(b"")  # the store fails every read now
        log = tmp_path / "extract.log"
        with celery_worker(env, log, "extract", "extract", concurrency=1):
            wait_for(lambda: "retrying in" in log.read_text(errors="replace"), 300, "a retry")
            # an upload meanwhile is refused (503, nothing created), not accepted and lost
            refused = api.post("/v1/jobs", files=[("files", ("late.pdf", pdf(INVOICE), PDF))])
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "blob_store_unavailable"
            assert "blob store" in log.read_text(errors="replace")
            assert api.get(f"/v1/jobs/{created.json()['id']}").json()["status"] != "succeeded"
            root.unlink()
            away.rename(root)  # the store is back
            final, _ = wait_until_final(api, created.json()["id"], timeout=600)

        assert final["status"] == "succeeded"
        assert final["progress"] == {"documents_done": FILES, "documents_failed": 0}
        results = all_results(api, created.json()["id"])
        assert [r["id"] for r in results] == [d["id"] for d in docs]
        assert all("label" in r and r["pages"] == 1 for r in results), results
        store = JobStore.from_url(own_settings.redis_url, shard_size=8, ttl_s=3600)
        assert store.answers(created.json()["id"]) == dict.fromkeys(range(FILES), 1)
        # deleted by the extract task after it stored the text, before the job could finish
        assert not any(p.is_file() for p in root.rglob("*")), "a read file's blob was kept"
