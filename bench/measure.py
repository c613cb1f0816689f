"""What the benches measure besides the clock: percentiles and the workers' batcher
counters (their metrics endpoints). CPU seconds per process tree are bench/procs.py's."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def worker_batches(ports: Sequence[int]) -> dict[str, float]:
    """What the workers' batchers sent so far, summed over their metrics endpoints."""
    total: dict[str, float] = {}
    for port in ports:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.startswith("docq_worker_") and sample.name.endswith("_total"):
                    key = sample.name + sample.labels.get("kind", "")
                    total[key] = total.get(key, 0.0) + sample.value
    return total
