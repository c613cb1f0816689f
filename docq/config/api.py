"""Settings: the API process, where it listens and how much one upload may ask of it."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Api(BaseModel):
    """Settings: the API's address and its per-upload limits."""

    api_host: str = Field("127.0.0.1", description="API bind address.")
    api_port: int = Field(8080, description="API port (Triton owns 8000-8002, Flower 5555).")
    max_upload_bytes: int = Field(
        256 * 1024 * 1024,
        description="Largest JSON or NDJSON body, and the most of a multipart upload the API "
        "holds in memory (its text, HTML and DOCX parts: PDFs and images stream to the blob "
        "store, max_stored_upload_bytes). Larger gets 413 instead of filling memory.",
    )
    max_documents_per_job: int = Field(
        100_000, description="Most documents in one job; more gets 413 (split the upload)."
    )
    max_document_chars: int = Field(
        2_000_000,
        description="Longest document text. Long documents are windowed, never truncated, so "
        "this caps the inference cost one document can cause.",
    )
    results_page_max: int = Field(
        1000, description="Largest `limit` of a results page; a larger one gets 422."
    )
    max_parsing_uploads: int = Field(
        4,
        ge=1,
        description="Uploads one API process parses at once (each in a worker thread, its "
        "body in memory); one more gets 429 with Retry-After. Higher admits more concurrent "
        "uploads for up to this many times max_upload_bytes of memory.",
    )
