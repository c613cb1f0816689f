"""The small-job lane through a Redis master kill (issue 41): with DOCQ_REDIS_MODE=sentinel,
each process on its own as `make up` runs them (the small-job worker with Celery's mingle
and gossip, as there), a bulk job running and two-document jobs uploaded every 0.5 s, the
master is SIGKILLed a third of the way into the bulk job and started again 5 s later, as a
supervisor would. Every small job answered 202 must finish.

What it guards against: 2 runs in 5 once left the small-job worker with its consumer gone
(kombu's Sentinel transport raising AttributeError as the consumer reconnected: Celery's
"Unrecoverable error") and the process alive and silent; every small job accepted after the
failover stayed `queued`. docq/broker.py makes that error a lost connection, which Celery's
consumer recovers from: no worker exits, and none logs an unrecoverable error
(tests/docq/test_broker.py reproduces the sequence deterministically). The supervisor stays,
so that a worker that does exit fails the test with its log rather than hanging it.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from devstack import stack
from devstack.sentinels import SentinelGroup, redis_sentinels
from devstack.services import REPO, api_server, stop, wait_for
from docq.store import open_store
from tests.conftest import fault_documents, settings_env, tenant_headers
from tests.support.polling import until
from tests.support.sentinel import failover_settings, kill_master

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

BULK = 240  # documents of the bulk job
SMALL = 2  # documents of each small job
EVERY_S = 0.5  # between small uploads
AFTER_RESTART_S = 20  # small uploads go on this long after the old master is back
FINAL_WITHIN_S = 180  # each accepted small job is final within this, after the uploads end
RUNS = int(os.environ.get("DOCQ_SENTINEL_LANE_RUNS", "1"))


@contextmanager
def supervised(env: dict[str, str], log: Path, queues: str, name: str) -> Iterator[list[int]]:
    """A worker as `make up` starts it (stack.worker: mingle, gossip and heartbeats on),
    started again whenever it exits, as its supervisor would (a Deployment, compose's restart
    policy); yields the exit statuses it was restarted after."""
    cmd = stack.worker(queues, f"{name}-{os.getpid()}", concurrency=4, pool="threads")
    exits: list[int] = []
    done = threading.Event()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        with log.open("ab") as out:
            procs.append(
                subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
            )

    def watch() -> None:
        while not done.wait(0.5):
            code = procs[-1].poll()
            if code is not None:
                exits.append(code)
                start()

    start()
    watcher = threading.Thread(target=watch, daemon=True)
    try:
        wait_for(lambda: b"ready." in log.read_bytes(), 300, f"worker (log: {log})", procs[-1])
        watcher.start()
        yield exits
    finally:
        done.set()
        if watcher.is_alive():
            watcher.join(5)
        stop(procs[-1], 30)


def kill_and_restart(group: SentinelGroup) -> None:
    """SIGKILL the master; 5 s later start it again on its data, as a replica of whichever
    server the Sentinels promoted."""
    old = kill_master(group)
    time.sleep(5)
    until(lambda: group.master_port() not in (None, old), "a promoted master", 60)
    new = group.master_port()
    group.start(old, replica_of=new)


def one_run(tmp_path: Path, triton_url: str) -> None:
    docs = fault_documents()
    with redis_sentinels(tmp_path / "redis") as group:
        s = failover_settings(group, triton_url, worker_stall_s=10)
        store = open_store(s)
        env = settings_env(s)
        small_log = tmp_path / "small-worker.log"
        with (
            supervised(env, tmp_path / "bulk-worker.log", "cpu", "bulk") as bulk_exits,
            supervised(env, small_log, "cpu-priority", "priority") as small_exits,
            api_server(env, tmp_path / "api.log") as url,
            httpx.Client(base_url=url, headers=tenant_headers(s), timeout=15) as api,
        ):
            created = api.post("/v1/jobs", json={"model": "doc-type", "documents": docs[:BULK]})
            assert created.status_code == 202, created.text
            big = created.json()["id"]
            accepted: list[str] = []
            stop_uploads = threading.Event()

            def upload() -> None:
                with httpx.Client(base_url=url, headers=tenant_headers(s), timeout=15) as c:
                    while not stop_uploads.wait(EVERY_S):
                        try:
                            answer = c.post("/v1/jobs", json={"documents": docs[:SMALL]})
                        except httpx.HTTPError:
                            continue  # the failover: the checker counts only 202s
                        if answer.status_code == 202:
                            accepted.append(answer.json()["id"])

            uploader = threading.Thread(target=upload, daemon=True)
            uploader.start()
            try:
                until(lambda: store.get_job(big).documents_done >= BULK // 3, "a third", 600)
                kill_and_restart(group)
                time.sleep(AFTER_RESTART_S)
            finally:
                stop_uploads.set()
                uploader.join(30)
            unfinished = []
            deadline = time.monotonic() + FINAL_WITHIN_S
            for job_id in accepted:
                while time.monotonic() < deadline:
                    if api.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded":
                        break
                    time.sleep(0.5)
                else:
                    unfinished.append(job_id)
            tail = small_log.read_text().splitlines()[-15:]
            assert not unfinished, (
                f"{len(unfinished)} of {len(accepted)} accepted small jobs unfinished; "
                f"the small-job worker was restarted after {small_exits}; its log ends:\n"
                + "\n".join(tail)
            )
            assert accepted
            # The consumers came back on their own: nothing needed the supervisor.
            assert (small_exits, bulk_exits) == ([], []), (small_exits, bulk_exits)
            for log in tmp_path.glob("*-worker.log"):
                assert "Unrecoverable error" not in log.read_text(), log
            print(f"\nrun: {len(accepted)} small jobs final; no worker exited")


@pytest.mark.timeout(1500 * RUNS)
def test_the_small_job_lane_survives_a_sentinel_failover(tmp_path: Path, triton_url: str) -> None:
    for k in range(RUNS):
        one_run(tmp_path / f"run-{k}", triton_url)
