"""The job store against a real redis-server."""

from __future__ import annotations

import pytest

from docq import keys
from docq.errors import NotFound, StoreUnavailable
from docq.jobs import DEFAULT_TENANT, JobStatus
from docq.store import Document, IdempotencyClaim, JobStore, WebhookTarget
from docq.store.creating import OPENING_TTL_S
from docq.store.tenants import Tenants


def docs(n: int) -> list[Document]:
    return [Document(f"d{i}", f"text {i}") for i in range(n)]


def ok(index: int) -> tuple[int, dict]:
    return index, {"id": f"d{index}", "label": "invoice", "scores": {"invoice": 1.0}, "windows": 1}


def test_create_job_stores_shards_in_upload_order(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(10))
    assert job.status is JobStatus.QUEUED
    assert (job.documents, job.shards, job.shard_size) == (10, 3, 4)
    shard = store.load_shard(job, 2)
    assert [(d.index, d.id, d.text) for d in shard] == [(8, "d8", "text 8"), (9, "d9", "text 9")]


def test_unknown_job_is_not_found(store: JobStore) -> None:
    with pytest.raises(NotFound):
        store.get_job("nope")


def test_progress_and_finalisation(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6))
    assert store.mark_running(job.id) is JobStatus.RUNNING
    assert store.complete_shard(job.id, 0, [ok(i) for i in range(4)]) is JobStatus.RUNNING
    mid = store.get_job(job.id)
    assert (mid.documents_done, mid.documents_failed, mid.started_at is not None) == (4, 0, True)
    status = store.complete_shard(job.id, 1, [ok(4), (5, {"id": "d5", "error": "boom"})])
    assert status is JobStatus.SUCCEEDED
    done = store.get_job(job.id)
    assert (done.documents_done, done.documents_failed) == (6, 1)
    assert done.finished_at is not None


def test_a_redelivered_shard_overwrites_and_never_double_counts(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6))
    failed = [(i, {"id": f"d{i}", "error": "triton down"}) for i in range(4)]
    store.complete_shard(job.id, 0, failed)
    store.complete_shard(job.id, 0, [ok(i) for i in range(4)])  # the re-run succeeds
    store.complete_shard(job.id, 0, [ok(i) for i in range(4)])  # and runs once more
    again = store.get_job(job.id)
    assert (again.documents_done, again.documents_failed) == (4, 0)
    assert again.status is JobStatus.QUEUED  # shard 1 still open: nothing finalised
    data, _ = store.results_page(again, 0, 10)
    assert [r["id"] for r in data] == ["d0", "d1", "d2", "d3"]
    assert all("label" in r for r in data)


def test_all_failed_is_a_failed_job(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(2))
    status = store.complete_shard(job.id, 0, [(i, {"id": f"d{i}", "error": "x"}) for i in range(2)])
    assert status is JobStatus.FAILED
    assert store.get_job(job.id).error


def test_results_page_stops_at_the_first_gap_while_running(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(10))
    store.complete_shard(job.id, 1, [ok(i) for i in range(4, 8)])  # shard 0 not done yet
    data, nxt = store.results_page(store.get_job(job.id), 0, 100)
    assert (data, nxt) == ([], 0)
    store.complete_shard(job.id, 0, [ok(i) for i in range(4)])
    data, nxt = store.results_page(store.get_job(job.id), 0, 5)
    assert [r["id"] for r in data] == ["d0", "d1", "d2", "d3", "d4"]
    assert nxt == 5
    data, nxt = store.results_page(store.get_job(job.id), 5, 100)
    assert [r["id"] for r in data] == ["d5", "d6", "d7"]
    assert nxt == 8  # shard 2 is still running
    store.complete_shard(job.id, 2, [ok(8), ok(9)])
    job = store.get_job(job.id)
    assert job.status is JobStatus.SUCCEEDED
    assert [r["id"] for r in store.iter_results(job, page=3)] == [f"d{i}" for i in range(10)]
    assert store.results_page(job, 8, 100) == ([ok(8)[1], ok(9)[1]], None)


def test_cancel_skips_the_rest_and_keeps_what_is_done(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(10))
    store.complete_shard(job.id, 0, [ok(i) for i in range(4)])
    assert store.cancel(job.id) is JobStatus.CANCELLED
    assert store.mark_running(job.id) is JobStatus.CANCELLED
    # a shard that was already running finishes without reopening the job
    assert store.complete_shard(job.id, 1, [ok(i) for i in range(4, 8)]) is JobStatus.CANCELLED
    job = store.get_job(job.id)
    assert [r["id"] for r in store.iter_results(job)] == [f"d{i}" for i in range(8)]
    assert store.cancel(job.id) is JobStatus.CANCELLED  # idempotent


def test_delete_job_leaves_nothing(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(5))
    store.delete_job(job.id, job.shards)
    assert not store.r.keys(f"*{job.id}*")


def test_jobs_can_be_created_from_many_threads_at_once(store: JobStore) -> None:
    # The API stores uploads from a thread pool; compression contexts must not be shared.
    from concurrent.futures import ThreadPoolExecutor

    uploads = [[Document(f"{t}-{i}", f"text {t} {i} " * 200) for i in range(40)] for t in range(16)]
    with ThreadPoolExecutor(8) as pool:
        jobs = list(pool.map(lambda docs: store.create_job("doc-type", docs), uploads))
    for job, docs in zip(jobs, uploads, strict=True):
        stored = [d for n in range(job.shards) for d in store.load_shard(job, n)]
        assert [(d.id, d.text) for d in stored] == [(d.id, d.text) for d in docs]


# --- a large upload stored in two writes (open_job, close_job) ------------------------


def listed(store: JobStore, job_id: str, tenant: str = DEFAULT_TENANT) -> dict[str, bool]:
    """Where a stored job is known: its tenant's jobs, the sweeper's and the audits' lists."""
    r = store.r
    return {
        "tenant": bool(r.sismember(keys.tenant_jobs(tenant), job_id)),
        "unenqueued": r.zscore(keys.unenqueued(), job_id) is not None,
        "active": r.zscore(keys.active(), job_id) is not None,
    }


def test_an_opened_job_is_listed_nowhere_and_expires_on_its_own(store: JobStore) -> None:
    job = store.open_job("doc-type", docs(10), 1, tenant="acme")
    assert (job.status, job.documents, job.shards, job.tenant) == (JobStatus.QUEUED, 10, 3, "acme")
    assert [d.id for d in store.load_shard(job, 0)] == ["d0", "d1", "d2", "d3"]
    with pytest.raises(NotFound):
        store.load_shard(job, 1)  # the rest comes with close_job
    assert listed(store, job.id, "acme") == dict.fromkeys(("tenant", "unenqueued", "active"), False)
    assert Tenants(store.r).load("acme").jobs == 0
    for key in (keys.job(job.id), keys.shard(job.id, 0)):  # an API that dies here leaves
        assert 0 < store.r.ttl(key) <= OPENING_TTL_S  # nothing for long
    # a worker may finish a first shard meanwhile: the job cannot finish without the rest
    assert store.complete_shard(job.id, 0, [ok(i) for i in range(4)]) is JobStatus.QUEUED


def test_a_closed_job_is_what_one_write_makes(store: JobStore) -> None:
    claim = IdempotencyClaim(store.new_job_id(), "fp", bound=False)
    assert store.idempotency.claim("digest", claim) is None
    hook = WebhookTarget("https://example.com/hook", "whsec_x")
    job = store.open_job("doc-type", docs(10), 1, job_id=claim.job_id, tenant="acme")
    store.complete_shard(job.id, 0, [ok(i) for i in range(4)])  # a worker, before the close
    store.close_job(job, docs(10), 1, webhook=hook, idempotency=("digest", claim))
    one = store.create_job("doc-type", docs(10), webhook=hook, tenant="acme")

    assert (
        listed(store, job.id, "acme")
        == listed(store, one.id, "acme")
        == dict.fromkeys(("tenant", "unenqueued", "active"), True)
    )
    assert [[d.text for d in store.load_shard(j, n)] for j in (job, one) for n in range(3)] == [
        [d.text for d in docs(10)[n * 4 : n * 4 + 4]] for _ in range(2) for n in range(3)
    ]
    hooks = [store.deliveries.get_webhook(j.id) for j in (job, one)]
    assert [(h.url, h.secret, h.state) for h in hooks if h] == [
        (hook.url, hook.secret, "waiting")
    ] * 2
    assert store.idempotency.claim("digest", claim) == IdempotencyClaim(job.id, "fp", True)
    # every key of the job, those the worker wrote before the close too, has the retention
    written = [keys.job(job.id), *(keys.shard(job.id, n) for n in range(3))]
    written += [keys.results(job.id), keys.shards_done(job.id), keys.answers(job.id)]
    assert all(store.r.ttl(key) > OPENING_TTL_S for key in written), [
        store.r.ttl(k) for k in written
    ]
    store.complete_shard(job.id, 1, [ok(i) for i in range(4, 8)])
    assert store.complete_shard(job.id, 2, [ok(8), ok(9)]) is JobStatus.SUCCEEDED
    assert [r["id"] for r in store.iter_results(store.get_job(job.id))] == [d.id for d in docs(10)]


def test_a_job_gone_before_it_is_closed_is_refused_and_leaves_nothing(store: JobStore) -> None:
    job = store.open_job("doc-type", docs(10), 1)
    store.r.delete(keys.job(job.id))  # as if it outlived OPENING_TTL_S
    with pytest.raises(StoreUnavailable, match="expired before"):
        store.close_job(job, docs(10), 1)
    assert not store.r.keys(f"*{job.id}*")
    assert listed(store, job.id) == dict.fromkeys(("tenant", "unenqueued", "active"), False)


def test_only_text_uploads_of_more_than_their_head_are_opened(store: JobStore) -> None:
    with pytest.raises(ValueError, match="head"):
        store.open_job("doc-type", docs(8), 2)  # two shards: nothing left to close with
    scan = Document("s", "", content_type="image/png", content=b"\x89PNG")
    with pytest.raises(ValueError, match="text"):
        store.open_job("doc-type", [*docs(8), scan], 1)
