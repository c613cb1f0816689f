"""Which registry a metrics endpoint serves, and the metrics both the API and the workers count.

prometheus-client keeps a process's metrics in memory, unless the process was started with
the library's own PROMETHEUS_MULTIPROC_DIR (a prefork pool, several API processes): then
every process writes its samples to files in that folder and an endpoint adds them up.
"""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry, Counter, multiprocess

# Counted where a job becomes final: by the shard worker that wrote its last shard
# (succeeded, failed) and by the API process that cancelled it.
JOBS_FINISHED = Counter(
    "docq_jobs_finished_total",
    "Jobs made final by this process, by final status.",
    ["model", "status"],
)


def multiprocess_dir() -> Path | None:
    """prometheus-client's multiprocess folder, when this process was started with one."""
    # The library reads this variable itself, at import; it is not a docq setting.
    value = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return Path(value) if value else None


def registry() -> CollectorRegistry:
    """What a metrics endpoint serves: this process's metrics, or in multiprocess mode
    those of every process that writes to the folder."""
    folder = multiprocess_dir()
    if folder is None:
        return REGISTRY
    collected = CollectorRegistry()
    multiprocess.MultiProcessCollector(collected, path=str(folder))
    return collected
