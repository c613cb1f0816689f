"""The API process dies during an upload (a 600-document upload, which the session's
settings store in two writes: api/submissions.py).

- Between writing the whole job and enqueueing the last of its shards: the sweeper enqueues
  the job, and a retry with the same Idempotency-Key answers with that job, so the upload
  makes exactly one job and every document is classified once.
- Between the two writes, after the first shards went out: nobody was told the job, and
  nothing of it lasts or counts (listed nowhere, everything expiring within
  OPENING_TTL_S, the first shards' results too); the same documents uploaded again make a
  job that completes.

The death is real: a process runs the upload's own code (api.submissions.submit, as the
route calls it) and exits with os._exit at that moment, so no `finally` or rollback runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from devstack.stack import REPO
from docq import keys
from docq.config import Settings
from docq.store import JobStore
from docq.store.creating import OPENING_TTL_S
from docq.store.tenants import TenantLoad, Tenants
from tests.conftest import TENANT, settings_env
from tests.support.jobs import all_results, wait_until_final
from tests.support.polling import until

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

    enqueue_shards = submissions.enqueue_shards

    def die(*args, **kwargs):
        os._exit(137)  # killed there

    def enqueue_or_die(app, job, shards=None, **kwargs):
        if shards is None or shards[-1] == job.shards - 1:  # the call that enqueues the last
            die()
        enqueue_shards(app, job, shards, **kwargs)

    s = get_settings()
    tenant, key, at = sys.argv[1], sys.argv[2], sys.argv[3]
    submissions.enqueue_shards = enqueue_or_die
    if at == "close":
        JobStore.close_job = die
    deps = Resources(
        settings=s,
        store=JobStore.from_url(s.redis_url, shard_size=s.shard_size, ttl_s=s.job_ttl_s),
        catalog=ModelCatalog(s.triton_endpoints, s.model_repository),
        celery=make_celery(s),
    )
    submissions.submit(deps, tenant, JobCreate.model_validate(json.load(sys.stdin)), key)
    """
)


def job_records(r: redis.Redis) -> set[bytes]:
    return {k for k in r.keys("docq:job:{*}") if isinstance(k, bytes)}


def die(
    upload: dict[str, Any], key: str, at: str, settings: Settings, tenant: str = TENANT
) -> None:
    """Run `tenant`'s upload in a process of its own that dies `at` "enqueue" or "close"."""
    died = subprocess.run(
        [sys.executable, "-c", DIE_BEFORE_ENQUEUE, tenant, key, at],
        input=json.dumps(upload).encode(),
        env=settings_env(settings),
        cwd=REPO,
        capture_output=True,
    )
    assert died.returncode == 137, died.stderr.decode()[-2000:]


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

    die(upload, key, "enqueue", settings)
    (written,) = job_records(r) - before  # the job was written...
    job_id = written.decode().split("{")[1].rstrip("}")
    # The first shards went out between the two writes: a worker may have started them.
    assert store.get_job(job_id).status.value in ("queued", "running")
    assert r.zscore("docq:unenqueued", job_id) is not None  # ...and never all enqueued

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


@pytest.mark.timeout(900)
def test_an_upload_whose_api_died_between_its_two_writes_leaves_nothing_that_lasts(
    api: TestClient, worker: object, settings: Settings
) -> None:
    r = redis.Redis.from_url(settings.redis_url)
    store = JobStore.from_url(settings.redis_url, shard_size=8, ttl_s=3600)
    docs = [{"id": d.id, "text": d.text[:300]} for d in generate(DOCUMENTS, seed=78)]
    upload = {"model": "doc-type", "documents": docs}
    before = job_records(r)
    # A tenant of its own: a job another test left unfinished cannot move its load.
    tenant = "tests-died-78"
    assert Tenants(r).load(tenant) == TenantLoad(0, 0)

    die(upload, "upload-78", "close", settings, tenant=tenant)
    (written,) = job_records(r) - before  # opened, never closed
    job_id = written.decode().split("{")[1].rstrip("}")
    head = settings.accept_head_shards * settings.shard_size
    until(lambda: r.hlen(keys.results(job_id)) == head, "the first shards classified", 300)
    assert not r.sismember(keys.tenant_jobs(tenant), job_id)
    assert r.zscore(keys.unenqueued(), job_id) is None
    assert r.zscore(keys.active(), job_id) is None
    assert Tenants(r).load(tenant) == TenantLoad(0, 0)  # it counts against no limit
    assert store.get_job(job_id).status.value == "running"  # and can never finish
    lasting = {k: r.ttl(k) for k in r.scan_iter(f"*{job_id}*")}
    assert lasting and all(0 < ttl <= OPENING_TTL_S for ttl in lasting.values()), lasting

    again = api.post("/v1/jobs", json=upload)  # the client, told nothing, uploads again
    assert again.status_code == 202, again.text
    job, _ = wait_until_final(api, again.json()["id"], timeout=600)
    assert job["progress"] == {"documents_done": DOCUMENTS, "documents_failed": 0}
