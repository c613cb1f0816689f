"""Both blob stores keep the same contract: DirectoryStore on the real file system, S3Store
against an S3 server process (moto's server mode: an emulator, tests/s3.py), over HTTP.

A blob streams in chunk by chunk and appears only at commit, whole; an aborted or
interrupted write leaves nothing visible (and `drop_partial` removes what it left); a
missing blob reads as None; deleting is idempotent; `older_than` lists by write time; a
store that fails raises BlobStoreUnavailable, a retryable error.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from docq.blobs import BlobStore, DirectoryStore, from_url, open_blobs, put
from docq.blobs.s3 import MIN_PART, S3Store
from docq.config import Settings
from docq.config.blobs import LOCAL_BLOBS
from docq.errors import BlobStoreUnavailable, RetryableError
from tests.support.s3 import CREDENTIALS, REGION, make_bucket, s3_emulator


@pytest.fixture(scope="module")
def s3_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with s3_emulator(tmp_path_factory.mktemp("s3") / "moto.log") as url:
        make_bucket(url, "docq-blobs")
        yield url


def s3_store(url: str, prefix: str) -> S3Store:
    settings = Settings(
        blob_url=f"s3://docq-blobs/{prefix}",
        blob_s3_endpoint_url=url,
        blob_s3_region=REGION,
        blob_s3_access_key_id=CREDENTIALS["aws_access_key_id"],
        blob_s3_secret_access_key=CREDENTIALS["aws_secret_access_key"],
        blob_part_bytes=MIN_PART,
    )
    store = from_url(settings.blob_url, settings)
    assert isinstance(store, S3Store)
    return store


@pytest.fixture(params=["directory", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "directory":
        return DirectoryStore(tmp_path / "blobs")
    url = request.getfixturevalue("s3_url")
    return s3_store(url, f"t/{tmp_path.name}")  # a prefix per test: nothing shared


def test_a_blob_streams_in_and_reads_back_whole(blobs: BlobStore) -> None:
    chunks = [os.urandom(1024 * 1024) for _ in range(12)]  # 12 MiB: S3 takes it in parts
    w = blobs.writer("u1/0")
    for chunk in chunks:
        w.write(chunk)
    assert blobs.get("u1/0") is None, "a blob is not visible before it is committed"
    ref = w.commit()
    whole = b"".join(chunks)
    assert ref.key == "u1/0" and ref.size == len(whole)
    assert ref.sha256 == hashlib.sha256(whole).hexdigest()
    assert blobs.get("u1/0") == whole
    small = put(blobs, "u1/1", b"%PDF-1.4 small")
    assert blobs.get("u1/1") == b"%PDF-1.4 small" and small.size == 14


def test_an_aborted_write_leaves_nothing_and_a_missing_blob_is_none(blobs: BlobStore) -> None:
    w = blobs.writer("u2/0")
    for _ in range(6):
        w.write(os.urandom(1024 * 1024))  # an S3 part is on its way already
    w.abort()
    w.abort()
    assert blobs.get("u2/0") is None
    assert list(blobs.older_than(time.time() + 60)) == []
    assert blobs.drop_partial(time.time() + 60) == 0, "abort left a partial write behind"


def test_an_interrupted_write_is_dropped_as_partial_once_old(blobs: BlobStore) -> None:
    w = blobs.writer("u3/0")
    for _ in range(6):
        w.write(os.urandom(1024 * 1024))
    # never committed nor aborted: the process that wrote it was killed
    assert blobs.get("u3/0") is None
    if not isinstance(blobs, S3Store):  # moto lists every upload as initiated in 2010
        assert blobs.drop_partial(time.time() - 3600) == 0, "not old enough yet"
    assert blobs.drop_partial(time.time() + 60) == 1
    assert blobs.drop_partial(time.time() + 60) == 0
    w.abort()  # (closes the file handle a killed process would have lost; writes nothing)
    assert blobs.get("u3/0") is None


def test_delete_is_idempotent_and_older_than_lists_by_write_time(blobs: BlobStore) -> None:
    put(blobs, "u4/0", b"a")
    put(blobs, "u4/1", b"b")
    between = time.time() + 1
    time.sleep(2.2)  # S3 keeps LastModified in whole seconds
    put(blobs, "u5/0", b"c")
    assert sorted(blobs.older_than(between)) == ["u4/0", "u4/1"]
    assert sorted(blobs.older_than(time.time() + 60)) == ["u4/0", "u4/1", "u5/0"]
    blobs.delete(["u4/0", "u4/0", "u9/9"])
    assert blobs.get("u4/0") is None and blobs.get("u4/1") == b"b"
    assert sorted(blobs.older_than(time.time() + 60)) == ["u4/1", "u5/0"]


def test_a_failing_directory_is_a_retryable_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_bytes(b"")  # a root below a file cannot be made, even as root
    store = DirectoryStore(tmp_path / "a-file" / "blobs")
    with pytest.raises(BlobStoreUnavailable) as caught:
        put(store, "u/0", b"%PDF-")
    assert isinstance(caught.value, RetryableError)
    for call in (lambda: store.get("u/0"), lambda: list(store.older_than(time.time()))):
        with pytest.raises(BlobStoreUnavailable):
            call()


def test_an_unreachable_s3_server_is_a_retryable_error(s3_url: str) -> None:
    from devstack.services import free_port

    store = s3_store(f"http://127.0.0.1:{free_port()}", "down")  # nothing listens there
    with pytest.raises(BlobStoreUnavailable):
        put(store, "u/0", b"%PDF-")
    with pytest.raises(BlobStoreUnavailable):
        store.get("u/0")


def test_blob_names_cannot_leave_the_directory(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    for bad in ("../x/0", "u/../../x", ".partial/x", "u", "u/0/1", "/abs"):
        with pytest.raises(ValueError):
            store.writer(bad)


def test_one_setting_names_the_store(tmp_path: Path) -> None:
    assert isinstance(from_url((tmp_path / "b").as_uri()), DirectoryStore)
    default = open_blobs(Settings())  # make up's: the checkout's .run/blobs
    assert isinstance(default, DirectoryStore) and default.root == LOCAL_BLOBS
    with pytest.raises(ValueError):
        from_url("ftp://host/x")


def test_an_s3_server_that_stops_answering_is_a_retryable_error(tmp_path: Path) -> None:
    """A server that accepts connections and never answers (hung, or stopped: the fault
    tests SIGSTOP one) times out: BlobStoreUnavailable, which a worker retries, not an error
    that fails the shard's documents (a timeout carries no S3 error code)."""
    import socket

    import botocore.config

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel accepts; nothing ever reads or answers
        store = S3Store(
            "docq-blobs",
            "silent",
            endpoint_url=f"http://127.0.0.1:{silent.getsockname()[1]}",
            region_name=REGION,
            config=botocore.config.Config(
                connect_timeout=1, read_timeout=1, retries={"total_max_attempts": 1}
            ),
            **CREDENTIALS,
        )
        with pytest.raises(BlobStoreUnavailable):
            store.get("u/0")
        with pytest.raises(BlobStoreUnavailable):
            put(store, "u/0", b"%PDF-")
