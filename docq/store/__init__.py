"""The job store on Redis.

jobs.py          jobs, document shards, results and progress (JobStore)
deliveries.py    the delivery state of each job's webhook event (JobStore.deliveries)
idempotency.py   Idempotency-Key claims (JobStore.idempotency)
recovery.py      shard leases and jobs not yet enqueued, for the sweeper (JobStore.recovery)
tenants.py       API keys (as keyed hashes) and each tenant's load, for its limits
codec.py         how shards are stored
connection.py    the client: every Redis failure becomes StoreUnavailable, here only
lua/             the scripts that make multi-key writes atomic
"""

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
]
