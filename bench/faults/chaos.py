"""One chaos run: a fault-free reference run of the documents, then the same documents as one
job (with small jobs beside it, every few seconds) while a seeded schedule SIGKILLs a random
process every 10-30 s (sometimes two at once) and a supervisor starts each again after a
short delay; then the fleet's checker (bench/faults/check.py) on what the client saw: no
document lost, duplicated or relabelled, every job final, every event delivered once; and
the last job done soon after the last fault.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.faults.chaos_stack import Fleet, fixed_ports
from bench.faults.check import check
from bench.faults.client import SECRET, Client, VerifyingReceiver, corpus, fault_free_labels
from bench.stack import settings_env
from devstack.fleet.hosts import FAST_RECOVERY
from devstack.stack import REPO
from docq.config import Settings
from docq.store import connection
from docq.store.tenants import Tenants

log = logging.getLogger("chaos")

VICTIMS = ("bulk", "priority", "webhooks", "triton", "redis", "api")
SMALL_JOB = 3  # documents of each small job (the priority lane)


@dataclass(frozen=True)
class Config:
    """What a run does; the seed fixes the faults, the refusals and the corpus."""

    seconds: float
    documents: int
    seed: int
    workdir: Path
    small_every_s: float = 10.0
    refuse_share: float = 0.1  # of webhook deliveries answered 503 (retried)
    recovery_s: float = 60.0  # the last job must be done this soon after the last fault
    settle_timeout_s: float = 900.0


def chaos_env(ports: dict[str, int]) -> dict[str, str]:
    """The DOCQ_* environment of every process: the stack on `ports`, recovering in seconds."""
    return {
        **settings_env(Settings(model_repository=REPO / "model_repository")),
        **FAST_RECOVERY,
        "DOCQ_REDIS_URL": redis_url(ports),
        "DOCQ_TRITON_GRPC_URL": f"127.0.0.1:{ports['triton_grpc']}",
        "DOCQ_SHARD_SIZE": "32",
    }


def redis_url(ports: dict[str, int]) -> str:
    return f"redis://127.0.0.1:{ports['redis']}/0"


def kill_at_random(fleet: Fleet, seed: int, until: float, faults: list[dict[str, Any]]) -> None:
    """The fault schedule: a seeded random process every 10-30 s, sometimes two, each
    started again after 1-4 s; every kill appended to `faults`."""
    rng = random.Random(seed)
    while True:
        wait = rng.uniform(10, 30)
        if time.time() + wait > until:
            return
        time.sleep(wait)
        count = 2 if rng.random() < 0.25 else 1
        for name in rng.sample(VICTIMS, count):
            delay = round(rng.uniform(1, 4), 1)  # drawn first: the seed fixes all
            if name in fleet.restarting:  # still starting after its last kill
                log.info("%s is still starting after its last kill: spared", name)
                continue
            log.info("SIGKILL %s; its supervisor starts it again in %.1f s", name, delay)
            faults.append({"at": time.time(), "process": name, "restart_after_s": delay})
            fleet.kill_then_restart(name, delay)


def run(cfg: Config) -> dict[str, Any]:
    """Start the fleet, run the reference and the chaos, check, stop; the report: the
    checker's, with the faults, the processes' own exits and the recovery measures."""
    ports = fixed_ports()
    fleet = Fleet(cfg.workdir, chaos_env(ports), ports)
    docs = corpus(cfg.documents, cfg.seed)
    faults: list[dict[str, Any]] = []
    progress: list[tuple[float, int]] = []  # (time, documents done)
    try:
        fleet.start_all()
        _, key = Tenants(connection.connect(redis_url(ports))).create_key("chaos")
        client = Client(fleet.api_url, key, cfg.workdir / "client", patience_s=600)
        receiver = VerifyingReceiver(client.record, SECRET, cfg.refuse_share, cfg.seed)
        with receiver.serve(path="/hooks/chaos") as url:
            hook = {"url": url, "secret": SECRET}
            client.follower.start()
            started = time.time()
            body = {"documents": docs, "webhook": hook}
            expected = fault_free_labels(client, body, cfg.settle_timeout_s)
            reference_s = round(time.time() - started, 1)
            log.info("reference run: %d documents in %.1f s", len(docs), reference_s)

            started = time.time()
            until = started + cfg.seconds
            chaos = threading.Thread(
                target=kill_at_random, args=(fleet, cfg.seed, until, faults), daemon=True
            )
            chaos.start()
            jobs = [client.upload("bulk", {"documents": docs, "webhook": hook}, until + 600)]
            stop = threading.Event()
            watch = threading.Thread(target=_watch, args=(client, jobs, progress, stop))
            watch.start()
            rng = random.Random(cfg.seed + 1)
            while time.time() + cfg.small_every_s < until:
                time.sleep(cfg.small_every_s)
                body = {"documents": rng.sample(docs, SMALL_JOB), "webhook": hook}
                jobs.append(client.upload(f"small-{len(jobs) - 1}", body, until + 600))
            chaos.join()
            fleet.join_restarts()
            log.info("faults over: %d kills; %d jobs uploaded", len(faults), len(jobs))
            client.settle(time.time() + cfg.settle_timeout_s)
            stop.set()
            watch.join(10)
            chaos_job_s = round(time.time() - started, 1)
            time.sleep(2)  # a duplicate event, if one were coming, would be here by now
        uploads_end = time.time()
        client.close()
    finally:
        fleet.stop_all()
    report = check(cfg.workdir / "client", expected, [], uploads_end, events_once=True)
    last_fault = max((f["at"] for f in faults), default=started)
    recovered_s = round(max(client.final.values(), default=last_fault) - last_fault, 1)
    # what the faults still cost after they stopped: `recovered_s` less the time the work
    # left at the last fault takes without faults (at the reference run's rate); when the
    # job outlasts the faults (a large job on a small box), this is what the bound is about
    done = max((n for t, n in progress if t <= last_fault), default=0)
    left_s = (report["documents"] - len(docs) - done) * reference_s / len(docs)
    lag_s = round(recovered_s - left_s, 1)
    if lag_s > cfg.recovery_s:
        report["violations"].append(
            f"last job done {recovered_s} s after the last fault, {lag_s} s more than its "
            "work needed"
        )
    return {
        "config": {k: str(v) for k, v in asdict(cfg).items()},
        "faults": faults,
        "crashes": fleet.restarts,  # exits nobody caused, started again by the supervisor
        "reference": {"documents": len(docs), "seconds": reference_s},
        "chaos_job_s": chaos_job_s,
        "recovered_s": recovered_s,
        "recovery_lag_s": lag_s,
        "refused_503": receiver.refused,
        **report,
    }


def _watch(
    client: Client, jobs: list[str | None], progress: list[tuple[float, int]], stop: threading.Event
) -> None:
    """Every 2 s, the documents done over the jobs so far, as the client last saw them."""
    while not stop.wait(2):
        progress.append((round(time.time(), 1), sum(client.done.get(j or "", 0) for j in jobs)))
