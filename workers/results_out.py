"""Write a manifest job's results back to the object store when it ends (docs/manifests.md).

A job that named a `results` prefix gets its results there as NDJSON files of
`manifest_results_lines` lines each (`results-00000.ndjson`, ... in manifest order), written
before its webhook event is dispatched, so that the event (the job's status) names them.
Safe to run twice: the files are written whole (a rerun writes the same bytes), and once
their URIs are recorded on the job they are not written again.
"""

from __future__ import annotations

import json
import logging

from docq.jobs import JobRecord
from docq.objects import Objects
from docq.store import JobStore
from docq.store.manifests import job_extra, set_results_files

log = logging.getLogger(__name__)


def write_back(store: JobStore, objects: Objects, job: JobRecord, lines: int) -> list[str] | None:
    """Write the results of final manifest `job` under its `results` prefix, unless done or
    not asked for; the URIs written (None: nothing to do). A store failure raises
    BlobStoreUnavailable (retryable: the task runs again and so does this)."""
    if job.manifest is None or job.results_files is not None or not job.status.final:
        return None
    key = job_extra(store, job.id).get("results_key")
    if not key:
        return None
    uris: list[str] = []
    batch: list[bytes] = []

    def flush() -> None:
        name = f"{key}results-{len(uris):05d}.ndjson"
        objects.write(name, b"".join(batch))
        uris.append(objects.url + name)
        batch.clear()

    for result in store.iter_results(job):
        batch.append(json.dumps(result, ensure_ascii=False).encode() + b"\n")
        if len(batch) == lines:
            flush()
    if batch:
        flush()
    set_results_files(store, job.id, uris)
    log.info("job %s: %d results files written under %s", job.id, len(uris), key)
    return uris
