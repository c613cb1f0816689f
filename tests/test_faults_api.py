"""The API process dies between writing a job and enqueueing its shards: the sweeper
enqueues the job, and a retry with the same Idempotency-Key answers with that job, so the
upload makes exactly one job and every document is classified.

The death is real: a process runs the upload's own code (api.submissions.submit, as the
route calls it) and exits with os._exit at the moment it would enqueue, so no `finally`
or rollback runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import redis
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from devstack.stack import REPO
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import TENANT, settings_env
from tests.test_e2e import all_results, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

DOCUMENTS = 600

DIE_BEFORE_ENQUEUE = textwrap.dedent(
    """
    import json, os, sys
    from api import submissions
    from api.deps import Resources
    from docq.catalog import ModelCatalog
    from docq.config import get_settings
    from docq.queue import make_celery
    from docq.schemas import JobCreate
    from docq.store import JobStore

    def die(*args, **kwargs):
        os._exit(137)  # killed between writing the job and enqueueing its shards

    s = get_settings()
    submissions.enqueue_shards = die
    deps = Resources(
        settings=s,
        store=JobStore.from_url(s.redis_url, shard_size=s.shard_size, ttl_s=s.job_ttl_s),
        catalog=ModelCatalog(s.triton_endpoints, s.model_repository),
        celery=make_celery(s),
    )
    tenant, key = sys.argv[1], sys.argv[2]
    submissions.submit(deps, tenant, JobCreate.model_validate(json.load(sys.stdin)), key)
    """
)


def job_records(r: redis.Redis) -> set[bytes]:
    return {k for k in r.keys("docq:job:{*}") if isinstance(k, bytes)}


@pytest.mark.timeout(900)
def test_an_upload_whose_api_died_before_enqueueing_makes_one_job_that_completes(
    api: TestClient, worker: object, settings: Settings
) -> None:
    r = redis.Redis.from_url(settings.redis_url)
    store = JobStore.from_url(settings.redis_url, shard_size=8, ttl_s=3600)
    docs = [{"id": d.id, "text": d.text[:300]} for d in generate(DOCUMENTS, seed=77)]
    upload = {"model": "doc-type", "documents": docs}
    key = "upload-77"
    before = job_records(r)

    died = subprocess.run(
        [sys.executable, "-c", DIE_BEFORE_ENQUEUE, TENANT, key],
        input=json.dumps(upload).encode(),
        env=settings_env(settings),
        cwd=REPO,
        capture_output=True,
    )
    assert died.returncode == 137, died.stderr.decode()[-2000:]
    (written,) = job_records(r) - before  # the job was written...
    job_id = written.decode().split("{")[1].rstrip("}")
    assert store.get_job(job_id).status.value == "queued"
    assert r.zscore("docq:unenqueued", job_id) is not None  # ...and never enqueued

    retry = api.post("/v1/jobs", json=upload, headers={"Idempotency-Key": key})
    assert retry.status_code == 200, retry.text  # the job the first attempt made
    assert retry.json()["id"] == job_id

    job, _ = wait_until_final(api, job_id, timeout=600)  # the sweeper enqueued it
    assert job["status"] == "succeeded"
    assert job["progress"] == {"documents_done": DOCUMENTS, "documents_failed": 0}
    assert [x["id"] for x in all_results(api, job_id, limit=200)] == [d["id"] for d in docs]
    assert store.answers(job_id) == dict.fromkeys(range(DOCUMENTS), 1)
    assert job_records(r) - before == {written}  # exactly one job
    assert r.zscore("docq:unenqueued", job_id) is None
