"""The blob store in an S3-compatible object store (`s3://bucket/prefix`): AWS S3, or any
server that speaks its API (MinIO, Ceph RGW...) at DOCQ_BLOB_S3_ENDPOINT_URL.

Through boto3, AWS's own client: it signs requests, retries throttling and dropped
connections (its "standard" mode), and reads credentials from the settings or its own chain
(an IAM role, AWS_* variables, ~/.aws). A blob streams in as a multipart upload of
`part_bytes` parts (one part in memory per upload being written), or one PUT when it is
smaller than a part; S3 makes it visible at completion, whole. Uploads a killed process
never completed are aborted by the orphan sweep (`drop_partial`); a bucket lifecycle rule
(AbortIncompleteMultipartUpload) does the same on the store's side.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from docq.blobs.base import BlobRef, Digesting
from docq.errors import BlobStoreUnavailable

MIN_PART = 5 * 1024 * 1024  # S3's smallest part (but the last)

# How long one request may wait for the server, and how many tries it gets (boto3's
# "standard" retries: throttling, dropped connections, timeouts). A server that stops
# answering (hung, or a partition that drops packets: connections accepted, never answered)
# fails a request after ATTEMPTS x (CONNECT_TIMEOUT_S or READ_TIMEOUT_S), about 20 s: an
# upload then gets its 503 and a worker its retry, instead of hanging for minutes (boto3's
# own defaults: 60 s x 3). The read timeout bounds each wait for bytes, not a transfer:
# a large object streams for as long as it takes. Shorter fails sooner under an outage and
# turns more of a slow store's stalls into 503s and retries.
CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 10
ATTEMPTS = 2  # in all, the first included (botocore's `max_attempts` counts retries only)


def _code(exc: Exception) -> str | None:
    """S3's error code of a failed request; None for a failure with no answer (a timeout,
    a refused connection: botocore gives those a `response` of None, or none at all)."""
    response = getattr(exc, "response", None) or {}
    return response.get("Error", {}).get("Code")  # type: ignore[no-any-return]


def _unavailable(what: str, exc: Exception) -> BlobStoreUnavailable:
    return BlobStoreUnavailable(f"blob store: could not {what}: {exc}", type(exc).__name__)


class S3Writer(Digesting):
    def __init__(self, store: S3Store, key: str) -> None:
        super().__init__(key)
        self.store = store
        self.name = store.name(key)
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self._count(data)
        self._buffer += data
        if len(self._buffer) >= self.store.part_bytes:
            self._send_part()

    def _send_part(self) -> None:
        s3, bucket = self.store.client(), self.store.bucket
        try:
            if self._upload_id is None:
                made = s3.create_multipart_upload(Bucket=bucket, Key=self.name)
                self._upload_id = made["UploadId"]
            n = len(self._parts) + 1
            sent = s3.upload_part(
                Bucket=bucket,
                Key=self.name,
                UploadId=self._upload_id,
                PartNumber=n,
                Body=bytes(self._buffer),
            )
        except self.store.errors as exc:
            self.abort()
            raise _unavailable(f"write {self.key}", exc) from exc
        self._parts.append({"PartNumber": n, "ETag": sent["ETag"]})
        self._buffer.clear()

    def commit(self) -> BlobRef:
        s3, bucket = self.store.client(), self.store.bucket
        try:
            if self._upload_id is None:
                s3.put_object(Bucket=bucket, Key=self.name, Body=bytes(self._buffer))
            else:
                if self._buffer:
                    self._send_part()
                s3.complete_multipart_upload(
                    Bucket=bucket,
                    Key=self.name,
                    UploadId=self._upload_id,
                    MultipartUpload={"Parts": self._parts},
                )
        except self.store.errors as exc:
            self.abort()
            raise _unavailable(f"store {self.key}", exc) from exc
        self._buffer = bytearray()
        return self._ref()

    def abort(self) -> None:
        self._buffer = bytearray()
        upload_id, self._upload_id = self._upload_id, None
        if upload_id is not None:
            with contextlib.suppress(*self.store.errors):  # else drop_partial aborts it later
                self.store.client().abort_multipart_upload(
                    Bucket=self.store.bucket, Key=self.name, UploadId=upload_id
                )


class S3Store:
    """Blobs as objects under `prefix` in `bucket`; `client_args` go to boto3.client."""

    def __init__(
        self, bucket: str, prefix: str, *, part_bytes: int = 8 * 1024 * 1024, **client_args: Any
    ) -> None:
        import boto3  # here: only a process whose store is S3 loads it
        import botocore.config
        import botocore.exceptions

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.part_bytes = max(part_bytes, MIN_PART)
        self.url = f"s3://{bucket}/{self.prefix}"
        self.errors = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)
        self._boto3 = boto3
        self._client_args = {
            "config": botocore.config.Config(
                retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
                connect_timeout=CONNECT_TIMEOUT_S,
                read_timeout=READ_TIMEOUT_S,
            ),
            **{k: v for k, v in client_args.items() if v is not None},
        }
        self._client: Any = None
        self._pid = 0
        self._lock = threading.Lock()

    def client(self) -> Any:
        """This process's client (made after any fork: a pool's sockets do not survive it)."""
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                self._client = self._boto3.client("s3", **self._client_args)
                self._pid = os.getpid()
            return self._client

    def name(self, key: str) -> str:
        return self.prefix + key

    def writer(self, key: str) -> S3Writer:
        return S3Writer(self, key)

    def get(self, key: str) -> bytes | None:
        try:
            got = self.client().get_object(Bucket=self.bucket, Key=self.name(key))
            return got["Body"].read()  # type: ignore[no-any-return]
        except self.errors as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                return None
            raise _unavailable(f"read {key}", exc) from exc

    def delete(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), 1000):  # DeleteObjects takes up to 1,000 keys
            batch = [{"Key": self.name(k)} for k in keys[start : start + 1000]]
            try:
                self.client().delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                )
            except self.errors as exc:
                raise _unavailable(f"delete {len(batch)} blobs", exc) from exc

    def older_than(self, before: float) -> Iterator[str]:
        pages = self.client().get_paginator("list_objects_v2")
        try:
            for page in pages.paginate(Bucket=self.bucket, Prefix=self.prefix):
                for obj in page.get("Contents", []):
                    if obj["LastModified"].timestamp() < before:
                        yield obj["Key"][len(self.prefix) :]
        except self.errors as exc:
            raise _unavailable("list the blobs", exc) from exc

    def drop_partial(self, before: float) -> int:
        s3 = self.client()
        dropped = 0
        try:
            pages = s3.get_paginator("list_multipart_uploads")
            for page in pages.paginate(Bucket=self.bucket, Prefix=self.prefix):
                for upload in page.get("Uploads", []):
                    if upload["Initiated"].timestamp() < before:
                        s3.abort_multipart_upload(
                            Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                        )
                        dropped += 1
        except self.errors as exc:
            raise _unavailable("list unfinished uploads", exc) from exc
        return dropped
