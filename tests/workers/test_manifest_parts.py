"""Reading a manifest job's parts (workers/objects.py) against a real Redis and two real
object stores: the directory store on the real file system, and moto's server mode, an S3
*emulator* (no real S3-compatible server installs here; tests/support/s3.py) over HTTP.

NDJSON objects are cut into byte ranges that fall inside lines: every line must be read by
exactly one part, in order; bad lines, duplicate ids and a missing object are per-document
errors; a part read twice writes nothing the second time; results come back in manifest
order and are written back as NDJSON files.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from docq.config import Settings
from docq.extract import Limits
from docq.jobs import JobRecord
from docq.manifests import plan
from docq.objects import DirectoryObjects, Objects, S3Objects
from docq.store import JobStore
from docq.store.manifests import create_manifest_job
from tests.support.s3 import CREDENTIALS, REGION, make_bucket, s3_emulator
from workers.objects import read_part
from workers.results_out import write_back

TENANT = "acme"
PART_BYTES = 1000  # small: most parts start and end inside a line


@pytest.fixture(scope="module")
def s3_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with s3_emulator(tmp_path_factory.mktemp("s3") / "moto.log") as url:
        yield url


@pytest.fixture(params=["directory", "s3"])
def objects(request: pytest.FixtureRequest, tmp_path: Path) -> Objects:
    if request.param == "directory":
        return DirectoryObjects(tmp_path / "objects")
    from docq.blobs.s3 import S3Store

    url = request.getfixturevalue("s3_url")
    bucket = f"objects-{uuid.uuid4().hex[:8]}"
    make_bucket(url, bucket)
    return S3Objects(S3Store(bucket, "root", endpoint_url=url, region_name=REGION, **CREDENTIALS))


def new_job(
    store: JobStore, objects: Objects, names: list[str], results: str | None = None
) -> JobRecord:
    keys = [f"tenants/{TENANT}/{name}" for name in names]
    sizes = [objects.size(k) for k in keys]
    assert None not in sizes
    parts = plan(zip(keys, sizes, strict=True), PART_BYTES, 4)  # type: ignore[arg-type]
    return create_manifest_job(
        store,
        "doc-type",
        parts,
        PART_BYTES,
        tenant=TENANT,
        scope_uri=objects.url + f"tenants/{TENANT}/",
        results_key=results,
    )


def read_all(store: JobStore, objects: Objects, job: JobRecord, settings: Settings) -> JobRecord:
    for n in range(job.shards):
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
    return store.get_job(job.id)


def documents(store: JobStore, job: JobRecord) -> list:  # type: ignore[type-arg]
    return [d for n in range(job.shards) for d in store.load_shard(job, n)]


def line(i: int) -> dict[str, str]:
    return {"id": f"doc-{i}", "text": f"invoice {i} " + "x" * (i * 7 % 300)}


def test_every_line_is_read_by_exactly_one_part_in_order(
    store: JobStore, objects: Objects, settings: Settings
) -> None:
    lines = [line(i) for i in range(400)]
    body = b"".join(json.dumps(d).encode() + b"\n" for d in lines)
    objects.write(f"tenants/{TENANT}/big.ndjson", body)
    job = new_job(store, objects, ["big.ndjson"])
    assert job.shards == -(-len(body) // PART_BYTES) > 50
    job = read_all(store, objects, job, settings)
    docs = documents(store, job)
    assert [(d.id, d.text) for d in docs] == [(d["id"], d["text"]) for d in lines]
    assert job.documents == 400 and job.parts_read == job.shards
    assert all(d.index // PART_BYTES < job.shards for d in docs)


def test_bad_lines_duplicates_files_and_a_missing_object_are_per_document_errors(
    store: JobStore, objects: Objects, settings: Settings
) -> None:
    rows = [
        b'{"id": "a", "text": "INVOICE 4711 total 40 EUR"}',
        b"",  # a blank line is no document
        b"this is not json",
        b'{"id": "b"}',
        b'{"text": "no id"}',
        b'{"id": "a", "text": "the same id again"}',
        b'{"id": "c", "text": "Dear customer, your order has shipped."}',
    ]
    objects.write(f"tenants/{TENANT}/mixed.ndjson", b"\n".join(rows) + b"\n")
    objects.write(f"tenants/{TENANT}/letter.txt", b"Lease agreement for the flat at 3 Elm Road")
    objects.write(f"tenants/{TENANT}/noise.bin", bytes(range(256)) * 4)
    objects.write(f"tenants/{TENANT}/gone.ndjson", b'{"id": "g", "text": "deleted"}\n')
    job = new_job(store, objects, ["mixed.ndjson", "letter.txt", "noise.bin", "gone.ndjson"])
    _delete(objects, f"tenants/{TENANT}/gone.ndjson")  # between the manifest and the fetch
    job = read_all(store, objects, job, settings)
    got = [(d.id, d.error_code) for d in documents(store, job)]
    at = [sum(len(r) + 1 for r in rows[:i]) for i in range(len(rows))]  # each line's offset
    assert got == [
        ("a", None),
        (f"mixed.ndjson@{at[2]}", "invalid_line"),
        ("b", "invalid_line"),  # (no text: its id is known)
        (f"mixed.ndjson@{at[4]}", "invalid_line"),
        ("a", "duplicate_id"),
        ("c", None),
        ("letter.txt", None),
        ("noise.bin", "unsupported_type"),
        ("gone.ndjson", "missing"),
    ]
    assert job.documents == 9


def test_a_part_read_twice_writes_nothing_twice(
    store: JobStore, objects: Objects, settings: Settings
) -> None:
    body = b"".join(json.dumps(line(i)).encode() + b"\n" for i in range(50))
    objects.write(f"tenants/{TENANT}/twice.ndjson", body)
    job = read_all(store, objects, new_job(store, objects, ["twice.ndjson"]), settings)
    again = read_all(store, objects, job, settings)
    assert again.documents == job.documents == 50
    assert [d.error_code for d in documents(store, again)] == [None] * 50  # no duplicate_id


def test_results_come_in_manifest_order_and_are_written_back(
    store: JobStore, objects: Objects, settings: Settings
) -> None:
    body = b"".join(json.dumps(line(i)).encode() + b"\n" for i in range(60))
    objects.write(f"tenants/{TENANT}/r.ndjson", body)
    job = new_job(store, objects, ["r.ndjson"], results=f"tenants/{TENANT}/out/")
    job = read_all(store, objects, job, settings)
    for n in reversed(range(job.shards)):  # parts finish in any order
        done = [(d.index, {"id": d.id, "label": "x"}) for d in store.load_shard(job, n)]
        store.finish_shard(job.id, n, done)
    job = store.get_job(job.id)
    assert job.status == "succeeded"
    assert [r["id"] for r in store.iter_results(job, page=7)] == [f"doc-{i}" for i in range(60)]
    uris = write_back(store, objects, job, 25)
    assert uris == [objects.url + f"tenants/{TENANT}/out/results-{i:05d}.ndjson" for i in range(3)]
    written = b"".join(objects.read(u.removeprefix(objects.url)) or b"" for u in uris)
    assert [json.loads(x)["id"] for x in written.splitlines()] == [f"doc-{i}" for i in range(60)]
    assert store.get_job(job.id).results_files == tuple(uris)
    assert write_back(store, objects, store.get_job(job.id), 25) is None  # once


def _delete(objects: Objects, key: str) -> None:
    if isinstance(objects, DirectoryObjects):
        (objects.root / key).unlink()
    else:
        assert isinstance(objects, S3Objects)
        objects.s3.client().delete_object(Bucket=objects.s3.bucket, Key=objects.s3.name(key))
