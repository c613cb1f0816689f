"""Settings: the blob store of uploaded files' bytes (docq/blobs) and its orphan sweep."""

from __future__ import annotations

from pydantic import BaseModel, Field

from docq.config.paths import REPO_ROOT

# Where make up's blobs go when DOCQ_BLOB_URL is empty (.run/ is ignored by git).
LOCAL_BLOBS = REPO_ROOT / ".run" / "blobs"


class Blobs(BaseModel):
    """Settings: the blob store."""

    blob_url: str = Field(
        "",
        description="Where uploaded files' bytes wait until an extract worker reads them "
        "(Redis keeps a ~100-byte reference each): empty, the checkout's .run/blobs (make "
        "up); file:///path, a directory every API "
        "and worker process can reach (one host, or a volume they all mount), or "
        "s3://bucket/prefix, any S3-compatible object store (DOCQ_BLOB_S3_*). A directory "
        "needs nothing more to run and is bounded by its disk; S3 scales and survives a "
        "host, at a request's latency per file.",
    )
    blob_s3_endpoint_url: str | None = Field(
        None,
        description="The S3-compatible server of an s3:// blob_url (MinIO, Ceph RGW...); "
        "None: AWS S3 itself.",
    )
    blob_s3_region: str | None = Field(None, description="The S3 region; None: boto3's own.")
    blob_s3_access_key_id: str | None = Field(
        None,
        description="S3 credentials; None (both): boto3's own chain (an IAM role for the "
        "pod, AWS_* variables, ~/.aws), which keeps keys out of docq's settings.",
    )
    blob_s3_secret_access_key: str | None = Field(None, description="See blob_s3_access_key_id.")
    blob_part_bytes: int = Field(
        8 * 1024 * 1024,
        ge=5 * 1024 * 1024,
        description="Part size of an S3 multipart upload: a file streaming into S3 holds one "
        "part in the API's memory. Larger parts take fewer requests and more memory per "
        "upload being parsed (S3's smallest is 5 MiB).",
    )
    blob_orphan_grace_s: float = Field(
        3600.0,
        gt=0,
        description="How old a blob no job refers to must be before the sweep deletes it "
        "(an upload refused or abandoned after its files streamed in, a job expired or "
        "deleted before its files were read, a worker killed between storing a text and "
        "deleting its file). It must exceed the longest upload: a blob is written before "
        "its job, which refers to it only once the whole upload is stored. Longer keeps "
        "orphans' bytes longer.",
    )
    blob_sweep_interval_s: float = Field(
        300.0,
        gt=0,
        description="How often the sweeper looks for orphaned blobs (one worker of the "
        "fleet at a time). Each look lists the whole store: shorter frees space sooner at "
        "the cost of a listing per interval.",
    )
