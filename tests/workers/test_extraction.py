"""workers.extraction against a real job store (no broker): a shard's files read into its
entries, failures as that document's error, the bytes gone once read, and a second run
that changes nothing. docq.extract itself is tested in tests/docq/extract."""

from __future__ import annotations

from pathlib import Path

import pytest

from docq import keys
from docq.blobs import DirectoryStore
from docq.errors import BlobStoreUnavailable, NotFound
from docq.extract import Limits
from docq.jobs import JobStatus
from docq.store import Document, JobStore
from docq.store.codec import unpack_shard
from tests.support.files import INVOICE, pdf
from workers.extraction import extract_shard

TWO = "Page two of the invoice."  # long enough to be read as text, not OCR'd
HTML = b"<html><body><p>Your parcel <b>has shipped</b>.</p><script>x()</script></body></html>"


def upload(store: JobStore) -> str:
    invoice = pdf(INVOICE, TWO)
    job = store.create_job(
        "doc-type",
        [
            Document("a.pdf", "", "application/pdf", invoice),
            Document("b.pdf", "", "application/pdf", invoice[:200]),  # truncated
            Document("c.txt", "plain text stays as it is"),
            Document("d.html", "", "text/html", HTML),
            Document("e.pdf", "", "application/pdf", pdf(INVOICE)),  # shard 1
        ],
    )
    assert job.files == 4 and job.shards == 2
    return job.id


def test_a_shard_s_files_are_read_into_it_and_their_bytes_deleted(store: JobStore) -> None:
    job_id = upload(store)
    job = extract_shard(store, job_id, 0, limits=Limits(), parallel=4)
    assert job is not None and job.id == job_id
    docs = store.load_shard(store.get_job(job_id), 0)
    assert [d.state for d in docs] == ["read", "failed", "read", "read"]
    a, b, c, d = docs
    assert (a.text, a.pages, a.extraction, a.chars) == (
        f"{INVOICE}\n\n{TWO}",
        2,
        "text",
        len(INVOICE) + 2 + len(TWO),
    )
    assert (b.error_code, b.text) == ("truncated", "") and b.error
    assert (c.content_type, c.text, c.pages, c.extraction) == (None, c.text, 1, "text")
    assert d.text == "Your parcel has shipped." and d.content_type == "text/html"
    assert [store.files.load(job_id, i) for i in range(4)] == [None] * 4
    assert store.files.load(job_id, 4) is not None, "shard 1 is not read by shard 0's task"


def test_a_second_run_reads_nothing_again_and_changes_nothing(store: JobStore) -> None:
    job_id = upload(store)
    extract_shard(store, job_id, 0, limits=Limits(), parallel=2)
    before = store.r.get(keys.shard(job_id, 0))
    again = extract_shard(store, job_id, 0, limits=Limits(), parallel=2)
    assert again is not None  # it still hands the shard on (the first hand-off may be lost)
    assert store.r.get(keys.shard(job_id, 0)) == before


def test_a_file_gone_before_it_was_read_fails_the_shard_rather_than_guess(
    store: JobStore,
) -> None:
    job_id = upload(store)
    store.r.delete(keys.file(job_id, 3))  # expired, say
    with pytest.raises(NotFound):
        extract_shard(store, job_id, 0, limits=Limits(), parallel=2)
    entries = unpack_shard(store.r.get(keys.shard(job_id, 0)))
    assert all(e[2]["state"] == "pending" for e in entries if len(e) == 3), "nothing written"


def test_a_cancelled_job_or_a_done_shard_is_not_read(store: JobStore) -> None:
    job_id = upload(store)
    store.cancel(job_id)
    assert store.get_job(job_id).status is JobStatus.CANCELLED
    assert extract_shard(store, job_id, 0, limits=Limits(), parallel=2) is None
    assert store.files.load(job_id, 0) is not None

    done = upload(store)
    store.finish_shard(done, 0, [(i, {"id": "x", "error": "e"}) for i in range(4)])
    assert extract_shard(store, done, 0, limits=Limits(), parallel=2) is None


def blob_names(store: JobStore) -> list[str]:
    assert isinstance(store.files.blobs, DirectoryStore)
    root = store.files.blobs.root
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_read_file_s_blob_is_deleted_after_its_text_is_stored(store: JobStore) -> None:
    job_id = upload(store)
    assert blob_names(store) == [f"{job_id}/{i}" for i in (0, 1, 3, 4)]
    extract_shard(store, job_id, 0, limits=Limits(), parallel=2)
    assert blob_names(store) == [f"{job_id}/4"], "shard 0's blobs stay after its text is stored"


def test_a_blob_gone_while_referenced_fails_that_document_only(store: JobStore) -> None:
    job_id = upload(store)
    assert store.files.blobs is not None
    store.files.blobs.delete([f"{job_id}/3"])  # the HTML file's bytes lost, its key kept
    extract_shard(store, job_id, 0, limits=Limits(), parallel=2)
    docs = {d.id: d for d in store.load_shard(store.get_job(job_id), 0)}
    assert docs["d.html"].state == "failed" and docs["d.html"].error_code == "missing"
    assert docs["a.pdf"].state == "read" and INVOICE.split()[0] in docs["a.pdf"].text


def test_a_failing_blob_store_is_retryable_and_changes_nothing(
    store: JobStore, tmp_path: Path
) -> None:
    job_id = upload(store)
    before = store.r.get(keys.shard(job_id, 0))
    (tmp_path / "a-file").write_bytes(b"")
    store.files.blobs = DirectoryStore(tmp_path / "a-file" / "blobs")  # unreadable now
    with pytest.raises(BlobStoreUnavailable):  # retryable: the task's retry runs it again
        extract_shard(store, job_id, 0, limits=Limits(), parallel=2)
    assert store.r.get(keys.shard(job_id, 0)) == before
    assert all(store.r.exists(keys.file(job_id, i)) for i in (0, 1, 3))
