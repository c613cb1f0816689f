"""workers.shard against a real job store: what a duplicate or late run may and may not
overwrite (the Triton side of run_shard is covered end to end)."""

from __future__ import annotations

from docq.jobs import JobStatus
from docq.models import ModelSpec
from docq.store import Document, JobStore
from docq.text.tokenizing import load_tokenizer
from workers.batcher import Batcher
from workers.shard import WorkerContext, fail_shard, run_shard


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


class OneModel:
    """The catalogue of a worker serving one model (no Triton behind it)."""

    def __init__(self, spec: ModelSpec) -> None:
        self._spec = spec

    def ensure_ready(self, name: str) -> None:
        pass

    def spec(self, name: str) -> ModelSpec:
        return self._spec


def test_a_document_the_model_refuses_gets_an_error_and_the_others_are_classified(
    store: JobStore,
) -> None:
    from tests.workers.test_pipeline import MARKER, TOKENIZER, Refuser, spec

    marker_id = load_tokenizer(TOKENIZER)(MARKER, add_special_tokens=False)["input_ids"][0]
    texts = ["an invoice", f"{MARKER} here", "a contract", "a receipt", "a letter", "a memo"]
    job = store.create_job("m", [Document(f"d{i}", t) for i, t in enumerate(texts)])
    batcher = Batcher(Refuser(marker_id).send, max_wait_s=0.0)
    ctx = WorkerContext(store=store, catalog=OneModel(spec()), batcher=batcher)  # type: ignore[arg-type]
    for n in range(job.shards):
        run_shard(ctx, job.id, n)
    after = store.get_job(job.id)
    assert after.status is JobStatus.SUCCEEDED
    assert (after.documents_done, after.documents_failed) == (6, 1)
    data, _ = store.results_page(after, 0, 6)
    assert data[1] == {
        "id": "d1",
        "error": "model 'm' rejected the request: bad input",
        # how it was read: every result says it, a text upload one page of text
        "pages": 1,
        "extraction": "text",
        "chars": len(texts[1]),
    }
    assert all("label" in r for i, r in enumerate(data) if i != 1)
    assert store.answers(job.id) == dict.fromkeys(range(6), 1)
