"""The API process SIGKILLed in the middle of a large multipart upload of PDFs: no job is
created, the client sees its connection broken, and once the orphan sweep's grace period
is over nothing of the upload is left in the blob store.

The API runs as `make up` runs it (uvicorn, a process of its own), the upload streams from
a generator (hundreds of MB of PDFs, never in the test's memory), and the kill lands once
the store holds two of its files whole and a third half-written: committed blobs no job
refers to and an unfinished write (a `.partial` file; an S3 multipart upload), the two
kinds of leftovers the sweep (workers/orphans.py) must clear. Both stores: the directory
on the real file system, and S3 on moto's server mode (an S3 emulator, tests/support/s3.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis

from devstack.services import free_port, redis_server, stop, wait_for
from devstack.stack import REPO, api
from docq import keys
from docq.blobs import open_blobs
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.files import INVOICE, pdf
from tests.support.polling import until
from tests.support.s3 import objects, s3_emulator_process, s3_settings
from workers.orphans import sweep_orphans

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

FILES = 20
FILE_BYTES = 20 * 1024 * 1024  # 400 MB in all: the kill lands after about 50
CHUNK = 1024 * 1024
BOUNDARY = "docq-kill-test-boundary"
GRACE_S = 2.0


def body() -> Iterator[bytes]:
    """A multipart body of FILES PDFs of FILE_BYTES each, made as it is sent."""
    head = pdf(INVOICE)
    filler = b"%" + b"-" * (CHUNK - 2) + b"\n"  # PDF comment lines: still a PDF's bytes
    for i in range(FILES):
        yield (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; '
            f'filename="big{i:02d}.pdf"\r\nContent-Type: application/pdf\r\n\r\n'
        ).encode()
        yield head
        for _ in range((FILE_BYTES - len(head)) // CHUNK):
            yield filler
        yield b"\r\n"
    yield f"--{BOUNDARY}--\r\n".encode()


def directory_leftovers(root: Path) -> Callable[[], tuple[list[str], list[str]]]:
    def left() -> tuple[list[str], list[str]]:
        files = [p for p in root.rglob("*") if p.is_file()]
        whole = [str(p.relative_to(root)) for p in files if p.parent.name != ".partial"]
        return whole, [p.name for p in files if p.parent.name == ".partial"]

    return left


@pytest.fixture(params=["directory", "s3"])
def store_settings(
    request: pytest.FixtureRequest, tmp_path: Path, settings: Settings
) -> Iterator[tuple[Settings, Callable[[], tuple[list[str], list[str]]]]]:
    """Settings on a Redis of its own, the blob store in a directory or an S3 bucket, and
    what is left in that store: (committed blobs, unfinished writes)."""
    with redis_server(tmp_path / "redis") as redis_url:
        own = settings.model_copy(update={"redis_url": redis_url})
        if request.param == "directory":
            root = tmp_path / "blobs"
            yield own.model_copy(update={"blob_url": root.as_uri()}), directory_leftovers(root)
            return
        with s3_emulator_process(tmp_path / "moto.log") as s3:

            def left() -> tuple[list[str], list[str]]:
                names = objects(s3.url, "kill")
                return [n for n in names if not n.startswith("partial:")], [
                    n for n in names if n.startswith("partial:")
                ]

            yield s3_settings(own, s3.url, "kill"), left


@pytest.mark.timeout(300)
def test_the_api_killed_mid_upload_creates_no_job_and_leaves_no_blob_after_the_sweep(
    store_settings: tuple[Settings, Callable[[], tuple[list[str], list[str]]]], tmp_path: Path
) -> None:
    own, left = store_settings
    port = free_port()
    env = {**settings_env(own), "DOCQ_API_PORT": str(port)}
    url = f"http://127.0.0.1:{port}"
    headers = {**tenant_headers(own), "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    outcome: list[BaseException | httpx.Response] = []

    def upload() -> None:
        try:
            with httpx.Client(timeout=120) as client:
                outcome.append(client.post(f"{url}/v1/jobs", content=body(), headers=headers))
        except BaseException as exc:  # what the client saw is the assertion
            outcome.append(exc)

    with (tmp_path / "api.log").open("wb") as log:
        proc = subprocess.Popen(api(), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, 120, "api", proc)
        sender = threading.Thread(target=upload, daemon=True)
        sender.start()
        # two files whole in the store and a third on its way: the middle of the upload
        until(lambda: len(left()[0]) >= 2 and left()[1], "two blobs and a partial", 180, 0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        sender.join(timeout=60)
    finally:
        stop(proc)

    assert len(outcome) == 1 and isinstance(outcome[0], httpx.TransportError), outcome
    r = redis.Redis.from_url(own.redis_url)
    assert r.keys(f"{keys.PREFIX}:job:*") == [], "a job was created"
    whole, partial = left()
    assert len(whole) >= 2 and partial, "the kill left nothing for the sweep to clear"
    time.sleep(GRACE_S)
    store = JobStore.from_url(own.redis_url, shard_size=8, ttl_s=3600, blobs=open_blobs(own))
    assert sweep_orphans(store, grace_s=GRACE_S, now=time.time()) == len(whole) + len(partial)
    assert left() == ([], []), "a blob of the killed upload outlived the sweep"
