"""A manifest job's limits as its parts are read (workers/objects.py, store/lua/write_part.lua),
against a real Redis and the directory object store on the real file system: the job's
document cap (DOCQ_MANIFEST_MAX_DOCUMENTS), and what the job counts in its tenant's load
(tenant_max_queued_documents) before and while its parts are read (docs/manifests.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docq.config import Settings
from docq.extract import Limits
from docq.jobs import JobRecord
from docq.manifests import plan
from docq.objects import DirectoryObjects, Objects
from docq.store import JobStore
from docq.store.manifests import create_manifest_job, most_queued
from docq.store.tenants import Tenants
from workers.objects import read_part

TENANT = "capped"
PART_BYTES = 1024  # the setting's least: a few dozen short lines a part
GROUP = 4


@pytest.fixture
def objects(tmp_path: Path) -> DirectoryObjects:
    return DirectoryObjects(tmp_path / "objects")


def lines(name: str, n: int) -> bytes:
    return b"".join(
        json.dumps({"id": f"{name}-{i}", "text": f"invoice {i} total {i * 3} EUR"}).encode() + b"\n"
        for i in range(n)
    )


def new_job(store: JobStore, objects: Objects, names: list[str], cap: int) -> JobRecord:
    keys = [f"tenants/{TENANT}/{name}" for name in names]
    sizes = [objects.size(k) or 0 for k in keys]
    parts = plan(zip(keys, sizes, strict=True), PART_BYTES, GROUP)
    return create_manifest_job(
        store,
        "doc-type",
        parts,
        PART_BYTES,
        tenant=TENANT,
        scope_uri=objects.url + f"tenants/{TENANT}/",
        max_documents=cap,
    )


def read(store: JobStore, objects: Objects, job: JobRecord, n: int, settings: Settings) -> None:
    assert read_part(
        store,
        objects,
        job,
        n,
        limits=Limits.from_settings(settings),
        max_chars=settings.max_document_chars,
        max_file_bytes=settings.max_file_bytes,
        parallel=2,
    )


def test_documents_past_the_cap_are_not_read_and_one_failed_document_names_each_rest(
    store: JobStore, objects: DirectoryObjects, settings: Settings
) -> None:
    objects.write(f"tenants/{TENANT}/a.ndjson", lines("a", 60))
    objects.write(f"tenants/{TENANT}/b.ndjson", lines("b", 60))
    for i in range(3):
        objects.write(f"tenants/{TENANT}/f{i}.txt", b"Dear customer, your order has shipped.")
    job = new_job(store, objects, ["a.ndjson", "b.ndjson", "f0.txt", "f1.txt", "f2.txt"], cap=50)
    (objects.root / f"tenants/{TENANT}/b.ndjson").unlink()  # past the cap: never fetched
    for n in range(job.shards):
        read(store, objects, job, n, settings)
    job = store.get_job(job.id)
    docs = [d for n in range(job.shards) for d in store.load_shard(job, n)]
    kept = [d for d in docs if d.error_code is None]
    assert [d.id for d in kept] == [f"a-{i}" for i in range(50)], "the first 50 in read order"
    over = [d for d in docs if d.error_code is not None]
    assert {d.error_code for d in over} == {"too_many_documents"}, [d.id for d in over]
    # one for the rest of the part that crossed the cap, one per part after it (b's parts:
    # not `missing`, so not fetched; the files' group: named by its first file)
    assert len(over) == job.shards - sum(1 for n in range(job.shards) if _only_kept(store, job, n))
    assert over[-1].id == "f0.txt" and "3 files" in (over[-1].error or "")
    assert job.documents == 50 + len(over) and job.parts_read == job.shards
    assert "DOCQ_MANIFEST_MAX_DOCUMENTS" in (over[0].error or "")


def _only_kept(store: JobStore, job: JobRecord, n: int) -> bool:
    return all(d.error_code is None for d in store.load_shard(job, n))


def test_a_manifest_job_counts_the_most_its_unread_parts_hold_in_its_tenants_load(
    store: JobStore, objects: Objects, settings: Settings
) -> None:
    objects.write(f"tenants/{TENANT}/a.ndjson", lines("a", 60))
    objects.write(f"tenants/{TENANT}/letter.txt", b"Lease agreement for the flat at 3 Elm Road")
    tenants = Tenants(store.r)
    before = tenants.load(TENANT).documents
    keys = [f"tenants/{TENANT}/a.ndjson", f"tenants/{TENANT}/letter.txt"]
    parts = plan([(k, objects.size(k) or 0) for k in keys], PART_BYTES, GROUP)
    uncapped = most_queued(parts, 0)
    assert uncapped > 61  # a line takes at least two bytes: far more than the 61 there are

    job = new_job(store, objects, ["a.ndjson", "letter.txt"], cap=100)
    assert tenants.load(TENANT).documents - before == min(uncapped, 100) == 100
    read(store, objects, job, 0, settings)  # the first part: some lines found, bound less
    first = store.get_job(job.id).documents
    held = tenants.load(TENANT).documents - before
    assert first < held <= 100
    for n in range(1, job.shards):
        read(store, objects, job, n, settings)
    assert tenants.load(TENANT).documents - before == 61  # all read: what it holds, exactly
