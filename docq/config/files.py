"""Settings: uploaded files (PDF, scans, DOCX, HTML) at the API and in the extract workers.

The per-document limits of reading a file (pages, pixels, time) are docq.extract's
(DOCQ_EXTRACT_*, docq/config/extract.py); where the bytes wait, the blob store's
(DOCQ_BLOB_*, docq/config/blobs.py).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class Files(BaseModel):
    """Settings: uploaded files."""

    max_file_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1,
        description="Largest uploaded file (a multipart part, or the decoded base64 "
        "`content` of a JSON document), counted as it streams: more gets 413. The bytes wait "
        "in the blob store (DOCQ_BLOB_URL) until an extract worker reads them, Redis holding "
        "a reference; a DOCX or HTML part is held in the API's memory while its upload is "
        "parsed (max_upload_bytes), a PDF or image is not. A text file keeps its own cap, 4 "
        "bytes per character of max_document_chars.",
    )
    max_stored_upload_bytes: int = Field(
        4 * 1024 * 1024 * 1024,
        ge=1,
        description="Largest multipart upload, counted as it streams (more gets 413). Its "
        "PDFs and images stream into the blob store and are never held in the API's "
        "memory, so this is bounded by the store's space, not by memory; text parts are "
        "held, and still count against max_upload_bytes.",
    )
    read_files_at_once: int = Field(
        4,
        ge=1,
        description="Files of one shard an extract task reads at once, each in a child "
        "process of the worker's pool (docq.extract, DOCQ_EXTRACT_PROCESSES children, which "
        "the shards of a worker's `--concurrency` share: files beyond it wait for a child). "
        "More finishes a shard of slow scans sooner and takes as many cores, each child up "
        "to DOCQ_EXTRACT_MEMORY_MIB.",
    )
