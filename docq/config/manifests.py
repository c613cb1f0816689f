"""Settings: jobs from object storage (manifests, docs/manifests.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from docq.config.paths import REPO_ROOT

# Where make up's tenants' objects are read from when DOCQ_MANIFEST_URL is empty.
LOCAL_OBJECTS = REPO_ROOT / ".run" / "objects"


class Manifests(BaseModel):
    """Settings: the object store that manifest jobs read, and how they are cut."""

    manifest_url: str = Field(
        "",
        description="The object store manifest jobs read documents from: empty, the "
        "checkout's .run/objects (make up); file:///path or s3://bucket/prefix (with the "
        "DOCQ_BLOB_S3_* endpoint and credentials). Each tenant reads only the objects under "
        "`tenants/<tenant>/` of it, and results are written back there. Not the blob store of "
        "uploads (DOCQ_BLOB_URL): the orphan sweep deletes what no job refers to there.",
    )
    manifest_part_bytes: int = Field(
        64 * 1024,
        ge=1024,
        description="An NDJSON object is read in parts of this many bytes, one task each "
        "(lines are cut where they start): 64 KiB is some 600 short documents or 30 of "
        "2 KB. Larger parts take fewer tasks and Redis keys (a few hundred bytes each) and "
        "make each task longer: first results later, more redone after a killed worker.",
    )
    manifest_max_objects: int = Field(
        10_000,
        ge=1,
        description="Most objects one manifest (or prefix) may name; more is a 413. Each "
        "object costs the API a HEAD (or a listing entry) before the 202.",
    )
    manifest_max_documents: int = Field(
        1_000_000,
        ge=1,
        description="Most documents one manifest job may hold. Its count is known only as "
        "workers read its parts, so the cap is applied there: the documents found past it "
        "are not read, and each part (or rest of a part) left unread is one failed document "
        "`too_many_documents` naming its object and byte range. Bounds a job's results in "
        "Redis (about 200 bytes a document) and what it reserves against its tenant's "
        "DOCQ_TENANT_MAX_QUEUED_DOCUMENTS at admission.",
    )
    manifest_results_lines: int = Field(
        100_000,
        ge=1,
        description="Results per NDJSON file written back under a job's `results` URI. "
        "Larger makes fewer files, each held in a worker's memory while it is written.",
    )
