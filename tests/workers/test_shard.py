"""workers.shard against a real job store: what a duplicate or late run may and may not
overwrite (the Triton side of run_shard is covered end to end)."""

from __future__ import annotations

from docq.jobs import JobStatus
from docq.store import Document, JobStore
from workers.shard import WorkerContext, fail_shard


def docs(n: int) -> list[Document]:
    return [Document(f"d{i}", f"text {i}") for i in range(n)]


def ok(index: int) -> tuple[int, dict]:
    return index, {"id": f"d{index}", "label": "invoice", "scores": {"invoice": 1.0}, "windows": 1}


def context(store: JobStore) -> WorkerContext:
    return WorkerContext(store=store, catalog=None, batcher=None)  # type: ignore[arg-type]


def test_a_late_give_up_keeps_the_results_of_a_run_that_succeeded(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6))
    # A duplicate run of shard 0 succeeded while this run was giving up on it.
    store.finish_shard(job.id, 0, [ok(i) for i in range(4)])
    assert fail_shard(context(store), job.id, 0, "triton down") is JobStatus.QUEUED
    after = store.get_job(job.id)
    assert (after.documents_done, after.documents_failed) == (4, 0)
    data, _ = store.results_page(after, 0, 4)
    assert all(r["label"] == "invoice" for r in data)
    assert store.answers(job.id) == {0: 1, 1: 1, 2: 1, 3: 1}


def test_a_give_up_answers_a_shard_that_has_no_results(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6))
    fail_shard(context(store), job.id, 0, "triton down")
    after = store.get_job(job.id)
    assert (after.documents_done, after.documents_failed) == (4, 4)
    data, _ = store.results_page(after, 0, 4)
    assert [r["error"] for r in data] == ["triton down"] * 4


def test_a_duplicate_run_answers_nothing_twice(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(4))
    first = store.finish_shard(job.id, 0, [ok(i) for i in range(4)])
    second = store.finish_shard(job.id, 0, [ok(i) for i in range(4)])
    assert (first.written, first.performed, second.written, second.performed) == (
        True,
        True,
        False,
        False,
    )
    assert store.answers(job.id) == {0: 1, 1: 1, 2: 1, 3: 1}
