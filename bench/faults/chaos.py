"""One chaos run: a fault-free reference run of the documents, then the same documents as one
job (with small jobs beside it, every few seconds) while a seeded schedule SIGKILLs a random
process every 10-30 s (sometimes two at once) and a supervisor starts each again after a
short delay; then the invariants, counted: no document lost, duplicated or relabelled,
every job final, every event delivered once, the last job done soon after the last fault.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos.client import PatientClient
from bench.chaos.fleet import Fleet, fixed_ports
from bench.fleet.client import corpus  # one-window documents: a run is CPU-sized
from bench.stack import settings_env
from bench.webhooks import VerifyingReceiver
from devstack.stack import REPO
from docq.config import Settings
from docq.errors import DocqError
from docq.store import JobStore, connection
from docq.store.tenants import Tenants

log = logging.getLogger("chaos")

VICTIMS = ("bulk", "priority", "webhooks", "triton", "redis", "api")
SECRET = "whsec_" + "Y2hhb3MtY2hhb3MtY2hhb3MtY2hhb3MtY2hhb3MtMTI="
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


@dataclass
class Report:
    """Everything the run measured (raw, for the JSON)."""

    config: dict[str, Any]
    faults: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)  # exits nobody caused
    jobs: int = 0
    documents: int = 0
    lost: int = 0
    duplicated: int = 0
    relabelled: int = 0
    failed_documents: int = 0
    not_final: list[str] = field(default_factory=list)
    webhooks: dict[str, Any] = field(default_factory=dict)
    events_missing: int = 0
    events_duplicated: int = 0
    reference_s: float = 0.0
    reference_documents: int = 0
    chaos_job_s: float = 0.0
    last_fault_at: float = 0.0
    last_done_at: float = 0.0
    client: dict[str, int] = field(default_factory=dict)

    progress: list[tuple[float, int]] = field(default_factory=list)  # (time, documents done)

    @property
    def recovered_s(self) -> float:
        """Seconds from the last fault to the last job done."""
        return round(self.last_done_at - self.last_fault_at, 1)

    @property
    def recovery_lag_s(self) -> float:
        """`recovered_s` less the time the work left at the last fault takes without faults
        (at the reference run's rate): what the faults still cost after they stopped. When
        the job outlasts the faults (a large job on a small box), this is what the 60 s
        bound is about."""
        done = max((n for t, n in self.progress if t <= self.last_fault_at), default=0)
        rate = self.reference_documents / self.reference_s if self.reference_s else 0.0
        left_s = (self.documents - done) / rate if rate else 0.0
        return round(self.recovered_s - left_s, 1)

    def violations(self, recovery_s: float) -> list[str]:
        """Each invariant that did not hold, in words (empty: all held)."""
        out = []
        for name in ("lost", "duplicated", "relabelled", "failed_documents"):
            if getattr(self, name):
                out.append(f"{getattr(self, name)} documents {name.replace('_documents', '')}")
        if self.not_final:
            out.append(f"jobs not final: {self.not_final}")
        if self.events_missing or self.events_duplicated or self.webhooks.get("bad_signatures"):
            out.append(f"webhooks: {self.events_missing} missing, {self.events_duplicated} twice")
        if self.recovery_lag_s > recovery_s:
            out.append(
                f"last job done {self.recovered_s} s after the last fault, "
                f"{self.recovery_lag_s} s more than its work needed"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "recovered_s": self.recovered_s,
            "recovery_lag_s": self.recovery_lag_s,
        }


def chaos_settings(ports: dict[str, int]) -> Settings:
    """Short leases, sweeps and backoffs, so that recovery is seconds, not the defaults'
    minutes; the visibility timeout stays at its hour (it must not be what recovers)."""
    return Settings(
        redis_url=f"redis://127.0.0.1:{ports['redis']}/0",
        triton_grpc_url=f"127.0.0.1:{ports['triton_grpc']}",
        model_repository=REPO / "model_repository",
        shard_size=32,
        # 15 s: with 6 s, heartbeats of live workers on this loaded 2-core box came late,
        # and their shards were enqueued again while they still held them
        shard_lease_s=15.0,
        sweep_interval_s=1.0,
        audit_interval_s=3.0,
        task_retry_backoff_s=1,
        task_retry_backoff_max_s=4,
        triton_timeout_s=30.0,
        webhook_allow_private_networks=True,
        webhook_timeout_s=2.0,
        webhook_backoff_s=1.0,
        webhook_backoff_max_s=4.0,
        webhook_max_attempts=100,
        webhook_stall_s=5.0,
    )


def wait_final(store: JobStore, job_ids: list[str], timeout: float) -> list[str]:
    """Wait until every job is final; returns those that are not when `timeout` passes."""
    deadline = time.monotonic() + timeout
    pending = list(job_ids)
    while pending and time.monotonic() < deadline:
        with contextlib.suppress(DocqError):  # the store restarting: look again
            pending = [j for j in pending if not store.get_job(j).status.final]
        time.sleep(0.5)
    return pending


def labels_of(store: JobStore, job_id: str) -> dict[str, str | None]:
    return {r["id"]: r.get("label") for r in store.iter_results(store.get_job(job_id))}


class Chaos:
    """The fault schedule: a seeded random process every 10-30 s, sometimes two."""

    def __init__(self, fleet: Fleet, seed: int, report: Report) -> None:
        self.fleet, self.rng, self.report = fleet, random.Random(seed), report
        self.restarts: list[threading.Thread] = []

    def run(self, until: float) -> None:
        while True:
            wait = self.rng.uniform(10, 30)
            if time.time() + wait > until:
                return
            time.sleep(wait)
            count = 2 if self.rng.random() < 0.25 else 1
            for name in self.rng.sample(VICTIMS, count):
                delay = round(self.rng.uniform(1, 4), 1)  # drawn first: the seed fixes all
                if self.fleet[name].lock.locked():  # still starting after its last kill
                    log.info("%s is still starting after its last kill: spared", name)
                    continue
                at = time.time()
                log.info("SIGKILL %s; its supervisor starts it again in %.1f s", name, delay)
                self.restarts.append(self.fleet.kill_then_restart(name, delay))
                self.report.faults.append({"at": at, "process": name, "restart_after_s": delay})
                self.report.last_fault_at = at

    def join(self) -> None:
        for thread in self.restarts:
            thread.join(600)


def run(cfg: Config) -> Report:
    """Start the fleet, run the reference and the chaos, check, stop; the report."""
    cfg.workdir.mkdir(parents=True, exist_ok=True)
    ports = fixed_ports()
    s = chaos_settings(ports)
    fleet = Fleet(cfg.workdir, settings_env(s), ports)
    report = Report(config={k: str(v) for k, v in asdict(cfg).items()})
    store = JobStore.from_url(s.redis_url, shard_size=s.shard_size, ttl_s=s.job_ttl_s)
    docs = corpus(cfg.documents, cfg.seed)
    try:
        fleet.start_all()
        fleet.watch()
        _, key = Tenants(connection.connect(s.redis_url)).create_key("chaos")
        client = PatientClient(fleet.api_url, {"Authorization": f"Bearer {key}"})
        receiver = VerifyingReceiver(SECRET, cfg.refuse_share, cfg.seed)
        with receiver.serve() as url:
            hook = {"url": url, "secret": SECRET}
            started = time.time()
            reference = client.upload(docs, hook, "reference")
            assert not wait_final(store, [reference], cfg.settle_timeout_s), "reference run"
            report.reference_s = round(time.time() - started, 1)
            report.reference_documents = len(docs)
            expected = labels_of(store, reference)
            log.info("reference run: %d documents in %.1f s", len(docs), report.reference_s)

            jobs = _chaos(cfg, fleet, store, client, docs, hook, report)
            _check(store, jobs, expected, report)
            _check_events(receiver, [reference, *jobs], report)
            report.client = {"refused": client.refused, "unavailable": client.unavailable}
            report.crashes = fleet.crashes
        client.close()
    finally:
        fleet.stop_all()
    return report


def _chaos(
    cfg: Config,
    fleet: Fleet,
    store: JobStore,
    client: PatientClient,
    docs: list[dict[str, str]],
    hook: dict[str, str],
    report: Report,
) -> list[str]:
    """Upload the job and the small jobs while the faults run; returns every job's id."""
    chaos = Chaos(fleet, cfg.seed, report)
    started = time.time()
    until = started + cfg.seconds
    faults = threading.Thread(target=chaos.run, args=(until,), name="chaos", daemon=True)
    faults.start()
    jobs = [client.upload(docs, hook, "bulk")]
    stop = threading.Event()
    watch = threading.Thread(target=_watch, args=(store, jobs, report, stop), daemon=True)
    watch.start()
    rng = random.Random(cfg.seed + 1)
    small = 0
    while time.time() + cfg.small_every_s < until:
        time.sleep(cfg.small_every_s)
        picked = rng.sample(docs, SMALL_JOB)
        jobs.append(client.upload(picked, hook, f"small-{small}"))
        small += 1
    faults.join()
    chaos.join()
    report.not_final = wait_final(store, jobs, cfg.settle_timeout_s)
    stop.set()
    report.chaos_job_s = round(time.time() - started, 1)
    log.info("faults over: %d kills; %d jobs uploaded", len(report.faults), len(jobs))
    return jobs


def _watch(store: JobStore, jobs: list[str], report: Report, stop: threading.Event) -> None:
    """Every 2 s, the documents done over the jobs so far (none while the store is down)."""
    started = time.time()
    while not stop.wait(2):
        with contextlib.suppress(DocqError):
            done = sum(store.get_job(j).documents_done for j in list(jobs))
            report.progress.append((round(time.time(), 1), done))
    log.info("progress watched for %.0f s", time.time() - started)


def _check(
    store: JobStore, jobs: list[str], expected: dict[str, str | None], report: Report
) -> None:
    """Count lost, duplicated, relabelled and failed documents over every job."""
    report.jobs = len(jobs)
    for job_id in jobs:
        job = store.get_job(job_id)
        report.documents += job.documents
        results = list(store.iter_results(job))
        answers = store.answers(job_id)
        report.lost += job.documents - len({i for i, n in answers.items() if n >= 1})
        report.duplicated += sum(1 for n in answers.values() if n > 1)
        report.failed_documents += sum(1 for r in results if "error" in r)
        report.relabelled += sum(
            1 for r in results if "label" in r and r["label"] != expected[r["id"]]
        )
        if job.finished_at is not None:
            report.last_done_at = max(report.last_done_at, job.finished_at.timestamp())


def _check_events(receiver: VerifyingReceiver, jobs: list[str], report: Report) -> None:
    """Every job's event at the receiver exactly once (after a last wait for stragglers)."""
    wanted = {f"msg_{j}" for j in jobs}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not wanted <= set(receiver.accepted):
        time.sleep(0.5)
    time.sleep(2)  # a duplicate, if one were coming, would be here by now
    missing = sorted(wanted - set(receiver.accepted))
    report.webhooks = {**receiver.summary(), "missing": missing}  # the ids, to find in the logs
    report.events_missing = len(missing)
    report.events_duplicated = sum(1 for w in wanted if receiver.accepted[w] > 1)
