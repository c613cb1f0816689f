"""The job store on Redis.

jobs.py          jobs, document shards, results and progress (JobStore)
creating.py      the writes of an upload, in one transaction or two (JobStore's base)
deliveries.py    the delivery state of each job's webhook event (JobStore.deliveries)
idempotency.py   Idempotency-Key claims (JobStore.idempotency)
recovery.py      shard leases and jobs not yet enqueued, for the sweeper (JobStore.recovery)
tenants.py       API keys (as keyed hashes) and each tenant's load, for its limits
codec.py         how shards are stored
connection.py    the client: every Redis failure becomes StoreUnavailable, here only
sentinel.py      the sentinel:// URL: the master that Redis Sentinels name, after failovers too
lua/             the scripts that make multi-key writes atomic
"""

from docq.blobs import open_blobs
from docq.config import Settings
from docq.store import connection
from docq.store.codec import Document
from docq.store.deliveries import WebhookTarget
from docq.store.idempotency import IdempotencyClaim
from docq.store.jobs import JobStore, ShardDocument, Transition

__all__ = [
    "Document",
    "IdempotencyClaim",
    "JobStore",
    "ShardDocument",
    "Transition",
    "WebhookTarget",
    "open_store",
]


def open_store(s: Settings) -> JobStore:
    """The job store of a docq process, as the settings say: redis_url (one Redis, or the
    master its Sentinels name), the shard size, the retention, and the replicas an upload
    must reach before it is answered 202, and the blob store of files' bytes (blob_url)."""
    store = JobStore(
        connection.from_settings(s),
        shard_size=s.shard_size,
        ttl_s=s.job_ttl_s,
        blobs=open_blobs(s),
    )
    store.replication = (s.redis_wait_replicas, s.redis_wait_timeout_ms)
    return store
