"""The blob store: where uploaded files' bytes wait for the extract workers, out of Redis.

base.py        BlobRef (what Redis keeps instead of the bytes), the BlobStore protocol
directory.py   DirectoryStore: files in a directory (file://, the default; a shared volume)
s3.py          S3Store: objects in an S3-compatible store (s3://bucket/prefix), via boto3

One setting picks the store (DOCQ_BLOB_URL, docq/config/blobs.py). The API streams each
multipart file into it as it arrives (api/streaming.py); store/files.py writes the
references with the job and deletes each blob once its text is stored; the sweeper removes
blobs no job refers to after a grace period (workers/orphans.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from docq.blobs.base import BlobRef, BlobStore, BlobWriter, digest, put
from docq.blobs.directory import DirectoryStore

if TYPE_CHECKING:  # (docq.schemas imports BlobRef: the SDK's imports stay light)
    from docq.config import Settings

__all__ = ["BlobRef", "BlobStore", "BlobWriter", "DirectoryStore", "digest", "open_blobs", "put"]


def from_url(url: str, settings: Settings | None = None) -> BlobStore:
    """The store a URL names: `file:///path` a directory, `s3://bucket/prefix` S3 (with
    the endpoint, region and credentials of `settings`)."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"blob_url {url!r}: a file:// URL names a local path")
        return DirectoryStore(Path(unquote(parts.path)))
    if parts.scheme == "s3":
        from docq.blobs.s3 import S3Store

        if not parts.netloc:
            raise ValueError(f"blob_url {url!r}: s3:// needs a bucket")
        s = settings
        return S3Store(
            parts.netloc,
            parts.path,
            part_bytes=s.blob_part_bytes if s else 8 * 1024 * 1024,
            endpoint_url=s.blob_s3_endpoint_url if s else None,
            region_name=s.blob_s3_region if s else None,
            aws_access_key_id=s.blob_s3_access_key_id if s else None,
            aws_secret_access_key=s.blob_s3_secret_access_key if s else None,
        )
    raise ValueError(f"blob_url {url!r}: use file:///path or s3://bucket/prefix")


def open_blobs(settings: Settings) -> BlobStore:
    """The blob store the settings name (DOCQ_BLOB_URL; empty: make up's .run/blobs)."""
    from docq.config.blobs import LOCAL_BLOBS

    return from_url(settings.blob_url or LOCAL_BLOBS.as_uri(), settings)
