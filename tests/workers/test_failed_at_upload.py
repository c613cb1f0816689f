"""Documents the API accepted as failed (issue 37) go through the worker's one result path
(finish_shard): answered once, counted as failed, and a job of nothing else finishes as any
job whose every document failed. Against a real job store; the model is never called."""

from __future__ import annotations

from docq.jobs import JobStatus
from docq.store import Document, JobStore
from tests.workers.test_pipeline import MARKER, TOKENIZER, Refuser, spec
from tests.workers.test_shard import OneModel
from workers.batcher import Batcher
from workers.shard import WorkerContext, fail_shard, run_shard


def bad(i: int, code: str = "type_mismatch") -> Document:
    return Document(f"b{i}.pdf", "", "application/pdf", error=f"bad file {i}", error_code=code)


class NoModel(Batcher):
    """A batcher that fails the test if anything reaches the model."""

    def __init__(self) -> None:
        pass

    def __getattribute__(self, name: str) -> object:
        raise AssertionError(f"the model was used ({name}) for documents that failed at upload")


def test_a_job_of_failed_documents_only_finishes_failed_each_answered_once(
    store: JobStore,
) -> None:
    job = store.create_job("m", [bad(i, "empty" if i % 2 else "type_mismatch") for i in range(6)])
    assert (job.shards, job.files) == (2, 0)
    ctx = WorkerContext(store=store, catalog=OneModel(spec()), batcher=NoModel())  # type: ignore[arg-type]
    statuses = [run_shard(ctx, job.id, n) for n in range(job.shards)]
    assert statuses[-1] is JobStatus.FAILED  # the last shard to finish finalizes it
    after = store.get_job(job.id)
    assert after.status is JobStatus.FAILED
    assert (after.documents_done, after.documents_failed) == (6, 6)
    data, _ = store.results_page(after, 0, 6)
    assert data[1] == {"id": "b1.pdf", "error": "bad file 1", "error_code": "empty"}
    assert [r["error_code"] for r in data] == ["type_mismatch", "empty"] * 3
    for n in range(job.shards):  # a redelivered shard answers nothing twice
        run_shard(ctx, job.id, n)
    assert store.answers(job.id) == dict.fromkeys(range(6), 1)
    assert store.get_job(job.id).documents_failed == 6


def test_failed_documents_beside_classified_ones_leave_the_job_succeeded(
    store: JobStore,
) -> None:
    from docq.text.tokenizing import load_tokenizer

    marker_id = load_tokenizer(TOKENIZER)(MARKER, add_special_tokens=False)["input_ids"][0]
    docs = [Document("t0", "an invoice"), bad(1), Document("t2", "a contract"), bad(3, "empty")]
    job = store.create_job("m", docs)
    batcher = Batcher(Refuser(marker_id).send, max_wait_s=0.0)
    ctx = WorkerContext(store=store, catalog=OneModel(spec()), batcher=batcher)  # type: ignore[arg-type]
    assert run_shard(ctx, job.id, 0) is JobStatus.SUCCEEDED
    after = store.get_job(job.id)
    assert (after.documents_done, after.documents_failed) == (4, 2)
    data, _ = store.results_page(after, 0, 4)
    assert [r.get("label") is not None for r in data] == [True, False, True, False]
    assert [r.get("error_code") for r in data] == [None, "type_mismatch", None, "empty"]


def test_a_shard_given_up_on_keeps_the_codes_of_documents_failed_at_upload(
    store: JobStore,
) -> None:
    job = store.create_job("m", [Document("t0", "an invoice"), bad(1, "not_utf8")])
    fail_shard(WorkerContext(store=store, catalog=None, batcher=None), job.id, 0, "triton down")  # type: ignore[arg-type]
    data, _ = store.results_page(store.get_job(job.id), 0, 2)
    assert data == [
        {"id": "t0", "error": "triton down"},
        {"id": "b1.pdf", "error": "bad file 1", "error_code": "not_utf8"},
    ]
