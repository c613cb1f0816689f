"""`make load`, the load run of issue 11: Locust headless against a running docq (`make up`),
two tenants uploading, polling and reading results. Locust writes its own statistics: the
summary table, and with `--csv` (`make load` gives bench/results/load) each endpoint's and
each JOB entry's count, failures and percentiles in `load_stats.csv`.

    make load                                                # 100 users, 3 minutes
    make load LOAD_ARGS="-u 5 -t 20s --csv /tmp/load"        # a rehearsal

Two tenants, TENANTS: users take them in turn, so half the users are each tenant's. Their
keys are made when the test starts, through docq.store.tenants in the Redis of the settings
(DOCQ_REDIS_URL, the same DOCQ_API_KEY_SECRET as the API; `make up`'s defaults need
neither), and revoked when it stops. The two tenants' names hash to different bulk lanes
(docq/queue.py), so the test also exercises the fairness between them.

Each simulated client uploads a job of synthetic business documents: mostly small ones
(SMALL_JOB documents: the small-job lane), and some bulk ones (BULK_JOB), polls it to the
end and pages through its results. Locust reports each endpoint's latency and a custom
JOB entry per tenant and size with the time from upload to the last result. A job still
running when the test ends is not counted; an answer other than the expected one is a
failure, except a 429 on upload: the API's backpressure (max_parsing_uploads, the tenant
limits) asks the client to come back after Retry-After, which it does (up to
UPLOAD_ATTEMPTS times), and each is counted apart as a REFUSED entry. The API's requests
are the entries of the other types (the README's count sums them). Locust exits 1 when
any request or job failed, so a script can gate on it. Like the rest of bench/, this file is
not part of docq.
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

from locust import HttpUser, between, events, task
from locust.env import Environment
from locust.stats import CSV_STATS_INTERVAL_SEC

from corpus.doc_type import generate
from docq.config import get_settings
from docq.store import connection
from docq.store.tenants import Tenants

TENANTS = ("load-a", "load-b")
SMALL_JOB = 8  # documents: at most DOCQ_SMALL_JOB_MAX_DOCUMENTS, so the small-job lane
BULK_JOB = 50  # documents: the tenant's bulk lane
POLL_S = 1.0
UPLOAD_ATTEMPTS = 10  # a 429 (the API's upload or tenant limits) is retried this often

CORPUS: list[dict[str, str]] = []  # 500 documents, written when the test starts
_keys: dict[str, str] = {}  # tenant -> API key
_made: list[str] = []  # ids of the keys made, revoked at the end
_turn = itertools.count()


def _tenants() -> Tenants:
    s = get_settings()
    return Tenants(connection.connect(s.redis_url), secret=s.api_key_secret)


@events.test_start.add_listener
def _start(environment: Environment, **_: Any) -> None:
    CORPUS.extend({"id": d.id, "text": d.text} for d in generate(500, seed=4321))
    tenants = _tenants()
    for tenant in TENANTS:
        record, key = tenants.create_key(tenant)
        _keys[tenant] = key
        _made.append(record.id)


@events.test_stop.add_listener
def _stop(environment: Environment, **_: Any) -> None:
    tenants = _tenants()
    for key_id in _made:
        tenants.revoke_key(key_id)
    # Locust rewrites its CSV every CSV_STATS_INTERVAL_SEC, and not again at exit: waiting
    # that long here, every user stopped, lets it write the run's final counts.
    time.sleep(CSV_STATS_INTERVAL_SEC + 0.5)


class Client(HttpUser):
    """A client application of one tenant that uploads documents and waits for results."""

    wait_time = between(0.5, 2.0)

    def on_start(self) -> None:
        self.tenant = TENANTS[next(_turn) % len(TENANTS)]
        self.client.headers["Authorization"] = f"Bearer {_keys[self.tenant]}"

    @task(3)
    def small_job(self) -> None:
        self.classify(SMALL_JOB)

    @task(1)
    def bulk_job(self) -> None:
        self.classify(BULK_JOB)

    def fire(self, kind: str, name: str, start: float, error: str | None = None) -> None:
        """A custom entry of Locust's statistics: a JOB (upload to its last result) or a
        REFUSED upload, timed from `start` (perf_counter)."""
        events.request.fire(
            request_type=kind,
            name=name,
            response_time=(time.perf_counter() - start) * 1000,
            response_length=0,
            exception=None if error is None else RuntimeError(error),
            context={},
        )

    def classify(self, documents: int) -> None:
        docs = random.sample(CORPUS, documents)
        job = f"{documents} documents to results ({self.tenant})"
        start = time.perf_counter()
        job_id = None
        for _ in range(UPLOAD_ATTEMPTS):
            sent = time.perf_counter()
            with self.client.post(
                "/v1/jobs", json={"documents": docs}, catch_response=True
            ) as resp:
                if resp.status_code == 429:  # backpressure, as designed: obey Retry-After
                    resp.success()
                    self.fire("REFUSED", "429 upload, retried after Retry-After", sent)
                    retry_after = float(resp.headers.get("Retry-After", "1"))
                elif resp.status_code != 202:
                    resp.failure(f"upload answered {resp.status_code}: {resp.text[:200]}")
                    return
                else:
                    job_id = resp.json()["id"]
                    break
            time.sleep(retry_after)
        if job_id is None:
            self.fire("JOB", job, start, f"upload refused {UPLOAD_ATTEMPTS} times")
            return
        # An error answer is a failure in Locust's statistics and ends the task here.
        status = "queued"
        while status in ("queued", "running"):
            time.sleep(POLL_S)
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
        ok = status == "succeeded" and results == documents
        self.fire("JOB", job, start, None if ok else f"job {job_id}: {status}, {results} results")
