"""Redis that survives losing its host (issue 22): the master of a master + replica + three
Sentinels topology (devstack's, down-after 1 s) is killed (SIGKILL) in the middle of a
600-document job. The API process and the workers, pointed at the Sentinels, follow the
promoted replica with no restart: every document of every upload answered 202 is answered
exactly once with the labels of a fault-free run; uploads during the failover get 503 JSON
within the client's timeout (no hang), and 202 again within the product's promise of 30 s;
Flower, on the same broker URL, sees the tasks the workers run after the failover.

Uploads wait for the replica (redis_wait_replicas=1), so a 202 means the job was on the
replica when the master died. The killed server comes back on its data as a replica of the
new master, as a supervisor restarting it would start it (deploy/k8s-sentinel/ does).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
import redis

from devstack.sentinels import redis_sentinels
from devstack.services import api_server, celery_worker, flower_server
from docq.store import open_store
from tests.conftest import FAULT_DOCUMENTS as DOCUMENTS
from tests.conftest import fault_documents, settings_env, tenant_headers
from tests.support.jobs import all_results, assert_unavailable, wait_until_final
from tests.support.polling import until
from tests.support.sentinel import failover_settings, kill_master

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

# The product's promise: uploads are accepted again at most this long after the master died.
BACK_WITHIN_S = 30
# What a client waits for one answer: a request that hangs longer fails the test.
CLIENT_TIMEOUT_S = 15
SMALL = 3  # documents of each upload sent during the failover
FLOWER_LOGIN = ("docq", "failover-test")
JOB_KEY = re.compile(rb"^docq:job:\{([0-9a-f]+)\}$")


@pytest.mark.timeout(1200)
def test_killing_the_master_mid_job_loses_no_accepted_document(
    tmp_path: Path, triton_url: str, fault_free_labels: list[tuple[str, str]]
) -> None:
    docs = fault_documents()
    with redis_sentinels(tmp_path / "redis") as group:
        s = failover_settings(group, triton_url)
        store = open_store(s)
        env = settings_env(s)
        with (
            celery_worker(env, tmp_path / "worker.log", "cpu,cpu-priority", concurrency=4),
            api_server(env, tmp_path / "api.log") as url,
            flower_server(env, tmp_path / "flower.log", FLOWER_LOGIN) as flower_url,
            httpx.Client(base_url=url, headers=tenant_headers(s), timeout=CLIENT_TIMEOUT_S) as api,
        ):
            created = api.post("/v1/jobs", json={"model": "doc-type", "documents": docs})
            assert created.status_code == 202, created.text
            big = created.json()["id"]
            until(lambda: store.get_job(big).documents_done >= 64, "64 documents", 600)

            done = store.get_job(big).documents_done
            old = kill_master(group)
            killed_at = time.monotonic()
            assert done < DOCUMENTS  # the kill came mid-job
            accepted, refused, slowest, restarted = [], 0, 0.0, False
            while True:
                sent = time.monotonic()
                answer = api.post("/v1/jobs", json={"documents": docs[:SMALL]})
                slowest = max(slowest, time.monotonic() - sent)
                if answer.status_code == 202:
                    accepted.append(answer.json()["id"])
                    break
                assert_unavailable(answer)  # 503 JSON, within the client's timeout
                refused += 1
                new = group.master_port()
                if not restarted and new not in (None, old):  # the supervisor's restart
                    group.start(old, replica_of=new)
                    restarted = True
                assert time.monotonic() - killed_at <= BACK_WITHIN_S, "uploads still refused"
                time.sleep(0.2)
            back_after = time.monotonic() - killed_at
            print(
                f"\nmaster killed: uploads 202 again after {back_after:.1f} s "
                f"({refused} answered 503 meanwhile, slowest answer {slowest:.1f} s)"
            )
            for _ in range(3):  # and the new master takes uploads as the old one did
                answer = api.post("/v1/jobs", json={"documents": docs[:SMALL]})
                assert answer.status_code == 202, answer.text
                accepted.append(answer.json()["id"])

            job, _ = wait_until_final(api, big, timeout=600)  # type: ignore[arg-type]
            assert job["status"] == "succeeded"
            assert job["progress"] == {"documents_done": DOCUMENTS, "documents_failed": 0}
            results = all_results(api, big, limit=200)  # type: ignore[arg-type]
            assert [(r["id"], r["label"]) for r in results] == fault_free_labels
            assert store.answers(big) == dict.fromkeys(range(DOCUMENTS), 1)
            for job_id in accepted:
                job, _ = wait_until_final(api, job_id, timeout=120)  # type: ignore[arg-type]
                assert job["status"] == "succeeded", job
                results = all_results(api, job_id)  # type: ignore[arg-type]
                assert [(r["id"], r["label"]) for r in results] == fault_free_labels[:SMALL]
                assert store.answers(job_id) == dict.fromkeys(range(SMALL), 1)

            # Flower's event consumer followed the new master too: the tasks of the jobs
            # accepted after the failover reached it (task events travel through the broker).
            def flower_saw(job_id: str) -> bool:
                tasks = httpx.get(
                    f"{flower_url}/api/tasks", auth=FLOWER_LOGIN, params={"state": "SUCCESS"}
                ).json()
                return any(job_id in str(t.get("args")) for t in tasks.values())

            for job_id in accepted:
                until(lambda j=job_id: flower_saw(j), f"Flower to see job {job_id}'s task", 60)

            # A refused upload that the dying master could not remove is on the new master
            # whole, if at all: the sweeper enqueues it, and it completes like any job.
            master = redis.Redis(port=group.master_port())
            every = [
                m.group(1).decode()
                for k in master.scan_iter("docq:job:*")
                if (m := JOB_KEY.match(k))
            ]
            for job_id in set(every) - {big, *accepted}:
                job, _ = wait_until_final(api, job_id, timeout=120)  # type: ignore[arg-type]
                assert job["status"] == "succeeded", job
                assert store.answers(job_id) == dict.fromkeys(range(SMALL), 1)
