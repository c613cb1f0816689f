"""An S3 server for the tests of the S3 blob store: moto's server mode, an S3 *emulator*
(moto answers S3's API from memory; no real S3-compatible server installs here from the
registries: Debian's radosgw needs a Ceph cluster, Debian's rclone (1.60) predates
`rclone serve s3`, PyPI's minio is a client), run as a process of its own on a free port,
reached through boto3 over HTTP as a real one would be. Its objects live in that
process's memory: a fault test cuts it off with SIGSTOP/SIGCONT, never a restart.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from devstack.services import free_port, stop, wait_for
from docq.config import Settings

CREDENTIALS = {"aws_access_key_id": "docq-test", "aws_secret_access_key": "docq-test-secret"}
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    """A running S3 server: its endpoint URL and its process (to stop it in a fault test)."""

    url: str
    proc: subprocess.Popen


@contextmanager
def s3_emulator_process(log: Path, port: int | None = None) -> Iterator[S3Server]:
    """`python -m moto.server` on `port` (a free one by default), once it answers."""
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
        yield S3Server(url, proc)
    finally:
        stop(proc)


@contextmanager
def s3_emulator(log: Path, port: int | None = None) -> Iterator[str]:
    """`python -m moto.server` on `port` (a free one by default); yields its endpoint URL."""
    with s3_emulator_process(log, port) as server:
        yield server.url


def client(url: str) -> Any:
    return boto3.client("s3", endpoint_url=url, region_name=REGION, **CREDENTIALS)


def make_bucket(url: str, bucket: str) -> None:
    client(url).create_bucket(Bucket=bucket)


def s3_settings(settings: Settings, url: str, bucket: str, prefix: str = "blobs") -> Settings:
    """`settings` with the blob store in `bucket` (made here) of the S3 server at `url`."""
    make_bucket(url, bucket)
    return settings.model_copy(
        update={
            "blob_url": f"s3://{bucket}/{prefix}",
            "blob_s3_endpoint_url": url,
            "blob_s3_region": REGION,
            "blob_s3_access_key_id": CREDENTIALS["aws_access_key_id"],
            "blob_s3_secret_access_key": CREDENTIALS["aws_secret_access_key"],
        }
    )


def objects(url: str, bucket: str) -> list[str]:
    """Every object in `bucket`, and every unfinished multipart upload (as `partial:<key>`)."""
    s3 = client(url)
    names = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    return names + [f"partial:{u['Key']}" for u in uploads]
