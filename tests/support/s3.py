"""An S3 server for the tests of the S3 blob store: moto's server mode, an S3 *emulator*
(moto answers S3's API from memory; no real S3-compatible server installs here from the
registries: Debian's radosgw needs a Ceph cluster, PyPI's minio is a client), run as a
process of its own on a free port, reached through boto3 over HTTP as a real one would be.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3

from devstack.services import free_port, stop, wait_for

CREDENTIALS = {"aws_access_key_id": "docq-test", "aws_secret_access_key": "docq-test-secret"}
REGION = "us-east-1"


@contextmanager
def s3_emulator(log: Path, port: int | None = None) -> Iterator[str]:
    """`python -m moto.server` on `port` (a free one by default); yields its endpoint URL."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        s3 = client(url)
        wait_for(lambda: bool(s3.list_buckets() is not None), 60, "moto S3 emulator", proc)
        yield url
    finally:
        stop(proc)


def client(url: str) -> object:
    return boto3.client("s3", endpoint_url=url, region_name=REGION, **CREDENTIALS)


def make_bucket(url: str, bucket: str) -> None:
    client(url).create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
