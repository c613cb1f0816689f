"""Locust load test against a running docq (`make up`): upload, poll, read results.

    .venv/bin/locust -f bench/locustfile.py --headless -u 4 -r 1 -t 60s \\
        --host http://127.0.0.1:8080

Clients authenticate with DOCQ_API_KEY, else with the development key `make up` made
(.run/dev-api-key), as `docq submit` does. Like the rest of bench/, this file is not part
of docq and reads its environment directly.

Each simulated client uploads a job of DOCUMENTS_PER_JOB synthetic business documents,
polls it to the end and pages through its results; Locust reports upload latency, poll
latency and a custom "job" entry with the time from upload to the last result.
"""

from __future__ import annotations

import os
import random
import time

from locust import HttpUser, between, events, task

from corpus.doc_type import generate
from devstack.__main__ import DEV_API_KEY

DOCUMENTS_PER_JOB = 50
CORPUS = [{"id": d.id, "text": d.text} for d in generate(500, seed=4321)]


class Client(HttpUser):
    """A client application that uploads batches of documents and waits for the results."""

    wait_time = between(0.5, 2.0)

    def on_start(self) -> None:
        key = os.environ.get("DOCQ_API_KEY") or DEV_API_KEY.read_text().strip()
        self.client.headers["Authorization"] = f"Bearer {key}"

    @task
    def classify_a_batch(self) -> None:
        docs = random.sample(CORPUS, DOCUMENTS_PER_JOB)
        start = time.perf_counter()
        with self.client.post("/v1/jobs", json={"documents": docs}, catch_response=True) as resp:
            if resp.status_code != 202:
                resp.failure(f"upload answered {resp.status_code}")
                return
            job_id = resp.json()["id"]
        status = "queued"
        while status in ("queued", "running"):
            time.sleep(0.5)
            status = self.client.get(f"/v1/jobs/{job_id}", name="/v1/jobs/[id]").json()["status"]
        cursor: str | None = "0"
        results = 0
        while cursor is not None:
            page = self.client.get(
                f"/v1/jobs/{job_id}/results",
                params={"limit": 100, "cursor": cursor},
                name="/v1/jobs/[id]/results",
            ).json()
            results += len(page["data"])
            cursor = page["next_cursor"]
        ok = status == "succeeded" and results == DOCUMENTS_PER_JOB
        events.request.fire(
            request_type="JOB",
            name=f"{DOCUMENTS_PER_JOB} documents to results",
            response_time=(time.perf_counter() - start) * 1000,
            response_length=results,
            exception=None if ok else RuntimeError(f"job {job_id}: {status}, {results} results"),
            context={},
        )
