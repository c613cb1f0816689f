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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.faults.check import check
from bench.faults.client import SECRET, Client, VerifyingReceiver, corpus, fault_free_labels
from devstack import stack
from devstack.fleet.hosts import FAST_RECOVERY
from devstack.services import free_port, settings_env, stop, wait_for
from devstack.stack import REPO, SHARD_THREADS
from devstack.supervisor import Supervisor, triton_ready
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


class Stack(Supervisor):
    """Every process of devstack/ on one host, as `make up` runs them: redis (job store and
    broker, append-only file fsynced always), tritonserver, the API, a bulk, a small-job and
    a webhooks worker; on ports chosen once, so that a restarted process comes back where the
    others look, with settings that recover in seconds (FAST_RECOVERY). What ends by itself
    is started again (devstack/supervisor.py), what the chaos kills a short while after."""

    def __init__(self, workdir: Path) -> None:
        super().__init__()
        self.workdir = workdir
        names = ("redis", "triton_http", "triton_grpc", "triton_metrics", "api")
        ports = {name: free_port() for name in names}
        self.api_url = f"http://127.0.0.1:{ports['api']}"
        self.redis_url = f"redis://127.0.0.1:{ports['redis']}/0"
        self.env = {  # every process's DOCQ_* (the launchers read their ports there too)
            **settings_env(Settings(model_repository=REPO / "model_repository")),
            **FAST_RECOVERY,
            **{f"DOCQ_{n.upper()}_PORT": str(p) for n, p in ports.items() if n != "redis"},
            "DOCQ_REDIS_URL": self.redis_url,
            "DOCQ_TRITON_GRPC_URL": f"127.0.0.1:{ports['triton_grpc']}",
            "DOCQ_SHARD_SIZE": "32",
        }
        self.restarting: set[str] = set()  # killed, or ended: starting again
        self.threads: list[threading.Thread] = []
        (workdir / "redis").mkdir(parents=True, exist_ok=True)
        self.services: dict[str, tuple[list[str], Callable[[], bool]]] = {
            "redis": (
                stack.redis(ports["redis"], workdir / "redis"),
                lambda: bool(redis.Redis(port=ports["redis"], socket_timeout=1).ping()),
            ),
            "triton": (stack.triton(), lambda: triton_ready(self.env["DOCQ_TRITON_GRPC_URL"])),
            "bulk": self.worker("bulk", "cpu", "threads", SHARD_THREADS),
            "priority": self.worker("priority", "cpu-priority", "threads", SHARD_THREADS),
            "webhooks": self.worker("webhooks", "webhooks", "prefork", 2),
            "api": (
                stack.api(),
                lambda: httpx.get(f"{self.api_url}/healthz", timeout=1).status_code == 200,
            ),
        }

    def worker(
        self, name: str, queues: str, pool: str, n: int
    ) -> tuple[list[str], Callable[[], bool]]:
        """A Celery worker's command line, and its readiness probe."""
        argv = stack.worker(queues, name, concurrency=n, pool=pool)

        def ready() -> bool:  # "ready." once per start: as many as the starts so far
            return self.log(name).read_bytes().count(b"ready.") >= self.starts[("local", name)]

        return [*argv, "--without-gossip", "--without-mingle"], ready

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def start(self, name: str) -> None:
        argv, ready = self.services[name]
        proc = self.spawn(("local", name), argv, self.env, self.log(name))
        wait_for(ready, 300, f"{name} (log: {self.log(name)})", proc)

    def start_all(self) -> None:
        for name in self.services:
            self.start(name)
        # a Celery worker's "Unrecoverable error" when Redis dies under it: after a second
        self.supervise(1.0, lambda _, name: self.restart_later(name, 1.0))

    def restart_later(self, name: str, delay_s: float) -> None:
        """Start `name` again after `delay_s` (in a thread), as a supervisor (systemd,
        Kubernetes) would."""

        def restart() -> None:
            time.sleep(delay_s)
            started = time.monotonic()
            self.start(name)
            log.info("%s is up again (%.1f s to start)", name, time.monotonic() - started)
            self.restarting.discard(name)

        self.restarting.add(name)
        self.threads.append(threading.Thread(target=restart, name=f"restart-{name}", daemon=True))
        self.threads[-1].start()

    def stop_all(self) -> None:
        self.stop_supervising()  # what is stopped now stays stopped
        for key in reversed(list(self.procs)):
            stop(self.procs[key])
            self.kill(key)  # what a SIGTERMed parent left behind


def kill_at_random(
    processes: Stack,
    client: Client,
    jobs: list[str | None],
    seed: int,
    until: float,
    faults: list[dict[str, Any]],
) -> None:
    """The fault schedule: a seeded random process every 10-30 s, sometimes two, each
    started again after 1-4 s; every kill appended to `faults`, with the documents of
    `jobs` done so far (as the client last saw them)."""
    rng = random.Random(seed)
    while True:
        wait = rng.uniform(10, 30)
        if time.time() + wait > until:
            return
        time.sleep(wait)
        count = 2 if rng.random() < 0.25 else 1
        for name in rng.sample(VICTIMS, count):
            delay = round(rng.uniform(1, 4), 1)  # drawn first: the seed fixes all
            if name in processes.restarting:  # still starting after its last kill
                log.info("%s is still starting after its last kill: spared", name)
                continue
            log.info("SIGKILL %s; its supervisor starts it again in %.1f s", name, delay)
            done = sum(client.done.get(j or "", 0) for j in jobs)
            faults.append({"at": time.time(), "process": name, "restart_after_s": delay})
            faults[-1]["done"] = done
            processes.kill(("local", name))
            processes.restart_later(name, delay)


def run(cfg: Config) -> dict[str, Any]:
    """Start the stack, run the reference and the chaos, check, stop; the report: the
    checker's, with the faults, the processes' own exits and the recovery measures."""
    processes = Stack(cfg.workdir)
    docs = corpus(cfg.documents, cfg.seed)
    faults: list[dict[str, Any]] = []
    try:
        processes.start_all()
        _, key = Tenants(connection.connect(processes.redis_url)).create_key("chaos")
        client = Client(processes.api_url, key, cfg.workdir / "client", patience_s=600)
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
            jobs: list[str | None] = []
            args = (processes, client, jobs, cfg.seed, until, faults)
            chaos = threading.Thread(target=kill_at_random, args=args, daemon=True)
            chaos.start()
            jobs.append(client.upload("bulk", {"documents": docs, "webhook": hook}, until + 600))
            rng = random.Random(cfg.seed + 1)
            while time.time() + cfg.small_every_s < until:
                time.sleep(cfg.small_every_s)
                body = {"documents": rng.sample(docs, SMALL_JOB), "webhook": hook}
                jobs.append(client.upload(f"small-{len(jobs) - 1}", body, until + 600))
            chaos.join()
            for thread in processes.threads:  # the last restarts
                thread.join(600)
            log.info("faults over: %d kills; %d jobs uploaded", len(faults), len(jobs))
            client.settle(time.time() + cfg.settle_timeout_s)
            chaos_job_s = round(time.time() - started, 1)
            time.sleep(2)  # a duplicate event, if one were coming, would be here by now
        uploads_end = time.time()
        client.http.close()
    finally:
        processes.stop_all()
    report = check(cfg.workdir / "client", expected, [], uploads_end, events_once=True)
    last_fault = max((f["at"] for f in faults), default=started)
    recovered_s = round(max(client.final.values(), default=last_fault) - last_fault, 1)
    # what the faults still cost after they stopped: `recovered_s` less the time the work
    # left at the last fault takes without faults (at the reference run's rate); when the
    # job outlasts the faults (a large job on a small box), this is what the bound is about
    left = report["documents"] - len(docs) - (faults[-1]["done"] if faults else 0)
    lag_s = round(recovered_s - left * reference_s / len(docs), 1)
    if lag_s > cfg.recovery_s:
        report["violations"].append(
            f"last job done {recovered_s} s after the last fault, {lag_s} s more than its "
            "work needed"
        )
    return {
        "config": {k: str(v) for k, v in asdict(cfg).items()},
        "faults": faults,
        "crashes": processes.restarts,  # exits nobody caused, started again by the supervisor
        "reference": {"documents": len(docs), "seconds": reference_s},
        "chaos_job_s": chaos_job_s,
        "recovered_s": recovered_s,
        "recovery_lag_s": lag_s,
        "refused_503": receiver.refused,
        **report,
    }
