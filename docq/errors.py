"""The one error tree of docq.

    DocqError
     ├── PermanentError          retrying cannot help: report it, never retry
     │    ├── ValidationError    a bad upload or query (API answers 4xx, no job is created)
     │    │    ├── MalformedBody
     │    │    ├── PayloadTooLarge
     │    │    ├── UnsupportedMediaType
     │    │    ├── ContentTypeMismatch   a file's declared type is not what its bytes are
     │    │    ├── InvalidDocuments   ?on_invalid=reject and some documents are bad: lists them all
     │    │    └── WebhookRefused     a webhook URL or secret docq will not use (SSRF guard)
     │    ├── Unauthorized       no API key, or one that is unknown or revoked (401)
     │    ├── NotFound           no such job (or it has expired, or is another tenant's)
     │    ├── ForbiddenObject    a manifest names an object outside its tenant's prefix (403)
     │    ├── Conflict           the request clashes with the job's state (API answers 409)
     │    │    └── IdempotencyKeyReused   same Idempotency-Key, different request
     │    ├── TenantLimitExceeded    the tenant has too much work in flight (429)
     │    ├── UnknownModel       the model is not in the Triton repository
     │    ├── ExtractionFailed   one document is bad (at upload or when read): its .code says why
     │    └── ModelError         the model answered with something unusable
     │         └── WindowsRejected    it refused some windows of a request, not all
     └── RetryableError          the world may heal: Celery retries these with backoff
          ├── InferenceUnavailable   Triton unreachable, overloaded or timed out
          ├── StoreUnavailable       Redis unreachable
          │    ├── StoreFull          Redis at maxmemory: it refuses writes, reads still work
          │    └── NotReplicated      no replica confirmed a write in time (Redis WAIT)
          ├── BlobStoreUnavailable   the blob store of file bytes (a directory, S3) failed
          ├── QueueUnavailable       the broker did not take a job's tasks
          └── Overloaded             the API is parsing all the uploads it may (429)

Only the API maps these to HTTP (api/errors.py); only RetryableError is retried.

A request is refused whole (4xx, nothing created) only for what is wrong with the request:
its body, its limits, its model, its ids, its webhook, its tenant's quota. What is wrong
with one document's content is that document's ExtractionFailed, found at upload
(api/files.py) or when its file is read (docq.extract), with one vocabulary of codes
(DOCUMENT_CODES): the document is accepted as failed and the rest of the job runs.
"""

from __future__ import annotations

from typing import Any


class DocqError(Exception):
    """Base of every error docq raises on purpose."""

    code = "internal_error"

    def __init__(self, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class PermanentError(DocqError):
    """An error that retrying cannot fix."""


class ValidationError(PermanentError):
    """The request is malformed; nothing was created."""

    code = "invalid_request"


class MalformedBody(ValidationError):
    """The body cannot be decoded at all (not JSON, not UTF-8)."""

    code = "malformed_body"


class PayloadTooLarge(ValidationError):
    """The upload exceeds a configured size limit."""

    code = "payload_too_large"


class UnsupportedMediaType(ValidationError):
    """The upload's content type is none of JSON, NDJSON or multipart, or a file's is none
    docq reads (judged from its bytes)."""

    code = "unsupported_media_type"


class ContentTypeMismatch(ValidationError):
    """A file's declared content type disagrees with what its bytes are (a PNG sent as a
    PDF): refused at upload (422), never guessed."""

    code = "content_type_mismatch"


class InvalidDocuments(ValidationError):
    """An upload asked for all or nothing (`?on_invalid=reject`) and some of its documents
    are bad: `detail["errors"]` lists every one (document, id, error_code, message)."""

    code = "invalid_documents"


class WebhookRefused(ValidationError):
    """A webhook URL (scheme, host, resolved address) or secret that docq refuses to use."""

    code = "webhook_refused"


class Unauthorized(PermanentError):
    """The request carries no API key, or one that is unknown or revoked."""

    code = "unauthorized"


class NotFound(PermanentError):
    """The job does not exist or has expired."""

    code = "not_found"


class ForbiddenObject(PermanentError):
    """A manifest names an object its tenant may not read (outside `tenants/<tenant>/` of
    the object store, docs/manifests.md); nothing was created."""

    code = "forbidden_object"


class Conflict(PermanentError):
    """The request cannot apply to the job as it is now (e.g. redeliver while delivering)."""

    code = "conflict"


class IdempotencyKeyReused(Conflict):
    """An Idempotency-Key came back with a different request (or its first use is in flight)."""

    code = "idempotency_key_reused"


class TenantLimitExceeded(PermanentError):
    """The tenant's jobs or queued documents are at their limit; retry once some finish."""

    code = "tenant_limit_exceeded"
    retry_after_s = 10  # a shard takes seconds: by then some work has usually drained


class UnknownModel(PermanentError):
    """The named model is not served by Triton."""

    code = "unknown_model"


# Why one document failed: its result's `error_code`, the same whether the API found it at
# upload (api/files.py) or a worker found it reading the file (docq.extract).
DOCUMENT_CODES = frozenset(
    {
        "unreadable",  # malformed, or the parser gave up or died
        "encrypted",  # a password-protected PDF or DOCX
        "truncated",  # the file ends before its structure does
        "type_mismatch",  # the bytes are not what the declared type says
        "empty",  # a file of zero bytes
        "not_utf8",  # a text file whose bytes are not UTF-8 (or hold NUL bytes)
        "no_text",  # readable, but no text in it (a blank page, an empty document)
        "too_many_pages",  # more pages than DOCQ_EXTRACT_MAX_PAGES
        "too_many_pixels",  # an image (or page) larger than DOCQ_EXTRACT_MAX_PIXELS
        "too_large",  # over its size cap, or decompresses (or grows in memory) past the limits
        "timeout",  # reading it took longer than DOCQ_EXTRACT_TIMEOUT_S
        "unsupported_type",  # a content type docq does not read
        "ocr_unavailable",  # it needs OCR and Tesseract is not installed here
        "missing",  # its bytes are gone from the blob store (docq.blobs) before it was read
        # or its object is gone from the object store before it was read (a manifest job)
        "invalid_line",  # a manifest's NDJSON line that is not JSON, or has no id or text
        "duplicate_id",  # a manifest's document whose id an earlier one of the job took
        "too_many_documents",  # a manifest's documents found past DOCQ_MANIFEST_MAX_DOCUMENTS
    }
)


class ExtractionFailed(PermanentError):
    """One document is bad (of no type docq reads, not its declared type, empty, encrypted,
    truncated, a bomb, over a limit...): that document's error, never the job's, whether
    found at upload or when its file is read. `code` says which (DOCUMENT_CODES)."""

    CODES = DOCUMENT_CODES

    def __init__(self, code: str, message: str, detail: Any = None) -> None:
        if code not in self.CODES:
            raise ValueError(f"unknown document failure code {code!r}")
        super().__init__(message, detail)
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        # crosses a process boundary (docq.extract.isolation): rebuild from the same three
        return (type(self), (self.code, self.message, self.detail))


class ModelError(PermanentError):
    """The model's configuration or answer is unusable."""

    code = "model_error"


class WindowsRejected(ModelError):
    """The model refused some windows (each alone) and answered the others: `logits` has a
    row per window (zeros where refused), `errors` the refusal of each refused row."""

    def __init__(self, logits: Any, errors: dict[int, ModelError]) -> None:
        first = next(iter(errors.values()))
        super().__init__(f"{len(errors)} windows refused: {first.message}", sorted(errors))
        self.logits = logits
        self.errors = errors


class RetryableError(DocqError):
    """A transient failure: the same work may succeed later."""

    code = "unavailable"


class InferenceUnavailable(RetryableError):
    """Triton could not be reached, was overloaded, or did not answer in time."""

    code = "inference_unavailable"


class StoreUnavailable(RetryableError):
    """Redis could not be reached."""

    code = "store_unavailable"


class BlobStoreUnavailable(RetryableError):
    """The blob store that holds uploaded files' bytes (docq.blobs: a directory or an
    S3-compatible object store) failed to write, read or list: unreachable, refusing, full."""

    code = "blob_store_unavailable"


class StoreFull(StoreUnavailable):
    """Redis is at its maxmemory and refuses writes (reads still work); nothing was written."""

    code = "store_full"
    # Memory comes back as jobs expire (retention) or an operator adds some: not in seconds.
    retry_after_s = 30


class NotReplicated(StoreUnavailable):
    """The master took a write that no replica confirmed in time (Redis WAIT): answered as
    unavailable, since losing the master now would lose the write."""

    code = "store_not_replicated"
    # A failover or a replica's resync takes seconds.
    retry_after_s = 5


class QueueUnavailable(RetryableError):
    """The broker did not take a job's tasks (the job was not created)."""

    code = "queue_unavailable"


class Overloaded(RetryableError):
    """The API process is parsing as many uploads as it may at once; retry shortly."""

    code = "overloaded"
    retry_after_s = 2  # an upload is parsed in seconds
