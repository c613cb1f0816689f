"""Every Redis key docq writes, in one place.

All keys of a job share the `{job_id}` hash tag so that a Redis Cluster keeps them in one
slot (the Lua scripts in store.py touch several of them at once).
"""

from __future__ import annotations

PREFIX = "docq"


def job(job_id: str) -> str:
    """Hash: the job record (status, model, counts, timestamps)."""
    return f"{PREFIX}:job:{{{job_id}}}"


def shard(job_id: str, n: int) -> str:
    """String: shard n's documents, zstd-compressed JSON: `[id, text]` a text document,
    `[id, text, meta]` a file document (store/codec.py)."""
    return f"{PREFIX}:job:{{{job_id}}}:shard:{n}"


def file(job_id: str, index: int) -> str:
    """String: the reference (docq.blobs.BlobRef: name, size, SHA-256) of the blob holding
    the uploaded file of document `index` (upload order), until the extract worker has read
    it into its shard (store/codec.py); then deleted, and the blob after it."""
    return f"{PREFIX}:job:{{{job_id}}}:file:{index}"


def file_blobs(upload: str) -> str:
    """Hash: blob part (docq.blobs: blob `<upload>/<part>`) -> `job_id index`, the file key
    (keys.file) that refers to it, so the orphan sweep can tell a blob still referred to
    from one no job refers to (workers/orphans.py). Written with the job, expires with it.
    Not under a job's hash tag: the blob's name, not a job, is what the sweep starts from."""
    return f"{PREFIX}:upload:{upload}:blobs"


def blob_sweep() -> str:
    """String: held (SET NX, expiring) by the worker sweeping orphaned blobs this interval,
    so that one worker of the fleet lists the blob store at a time."""
    return f"{PREFIX}:blobs:sweep"


def invalid(job_id: str) -> str:
    """String: JSON list of the documents the API accepted as failed (`{document, id,
    error_code, message}`), for the upload's answer and its replays; absent when none."""
    return f"{PREFIX}:job:{{{job_id}}}:invalid"


def results(job_id: str) -> str:
    """Hash: document index (upload order) -> result JSON. HSET makes re-runs overwrite."""
    return f"{PREFIX}:job:{{{job_id}}}:results"


def shards_done(job_id: str) -> str:
    """Hash: shard number -> failed-document count of its last completed run."""
    return f"{PREFIX}:job:{{{job_id}}}:shards"


def webhook(job_id: str) -> str:
    """Hash: the job's webhook (url, secret) and, once the job is final, its event's delivery
    state (type, webhook id, state, attempts, token of the delivery chain, payload)."""
    return f"{PREFIX}:job:{{{job_id}}}:webhook"


def webhook_attempts(job_id: str) -> str:
    """List: one JSON record per delivery attempt (time, status code or error, duration)."""
    return f"{PREFIX}:job:{{{job_id}}}:webhook:attempts"


def webhooks_due() -> str:
    """Sorted set: id of each job whose webhook event waits for an attempt -> when a sweeper
    must enqueue its delivery (epoch s): the next retry's time, the end of a running
    attempt's lease, or a sweeper's own re-check (workers/retries.py). Not under a job's hash
    tag: the sweeper reads every job's at once."""
    return f"{PREFIX}:webhooks:due"


def idempotency(key_digest: str) -> str:
    """String: `job_id request_fingerprint` claimed by an Idempotency-Key (sha256 of the key).

    Not under a job's hash tag: the key is claimed before the job exists.
    """
    return f"{PREFIX}:idempotency:{key_digest}"


def api_key(key_id: str) -> str:
    """Hash: one API key (tenant, HMAC-SHA256 of the key, created_at); never the key itself."""
    return f"{PREFIX}:apikey:{key_id}"


def api_keys() -> str:
    """Set: the ids of every API key, for `docq keys list`."""
    return f"{PREFIX}:apikeys"


def tenant_jobs(tenant: str) -> str:
    """Set: ids of the tenant's jobs that may still be queued or running (members are pruned
    when found final or expired), for the per-tenant limits."""
    return f"{PREFIX}:tenant:{{{tenant}}}:jobs"


def answers(job_id: str) -> str:
    """Hash: document index -> how many times a result was written for it (the ledger that
    shows each document answered once; a failed answer replaced by a label counts twice)."""
    return f"{PREFIX}:job:{{{job_id}}}:answers"


def leases() -> str:
    """Sorted set: `job_id shard` of each running shard -> when its lease expires (epoch s).

    Not under a job's hash tag: the sweeper reads every job's leases at once."""
    return f"{PREFIX}:leases"


def missing(job_id: str) -> str:
    """Hash: shard number (-1: the job's webhook event) -> when an audit first found it
    nowhere (no result, lease or message): one still missing at the next audit is enqueued
    again (workers/audit.py)."""
    return f"{PREFIX}:job:{{{job_id}}}:missing"


def active() -> str:
    """Sorted set: id of each job not yet known to be final, or final with its webhook event
    not yet settled -> when it is next due for an audit of its shards or event (epoch s).
    Not under a job's hash tag."""
    return f"{PREFIX}:active"


def unenqueued() -> str:
    """Sorted set: id of each job whose record is written but whose shards are not yet known
    to be enqueued -> when it was written (epoch s). Not under a job's hash tag."""
    return f"{PREFIX}:unenqueued"


def parts_read(job_id: str) -> str:
    """Hash: part (shard) number -> documents found in it, for each part of a manifest job
    a worker has read (docq/manifests.py); a part is read into its shard once."""
    return f"{PREFIX}:job:{{{job_id}}}:parts"


def document_ids(job_id: str) -> str:
    """Hash: document id -> its index, of a manifest job's documents read so far: the first
    document with an id holds it, a later one is a `duplicate_id` (store/manifests.py)."""
    return f"{PREFIX}:job:{{{job_id}}}:ids"
