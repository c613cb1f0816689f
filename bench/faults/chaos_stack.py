"""The chaos run's stack as a supervisor runs it: every process of devstack/ on fixed ports,
each in a session of its own (so SIGKILL takes its children: prefork pools, Triton's
stubs), and started again on the same command line a short while after it is killed."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis
import tritonclient.grpc as grpcclient

from devstack import stack
from devstack.services import free_port, wait_for
from devstack.stack import REPO, SHARD_THREADS

log = logging.getLogger("chaos")


@dataclass
class Service:
    """One supervised process: how to start it and how to know it is up."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    ready: Callable[[], bool]
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    expected_down: bool = False  # killed by the chaos: its restart is already scheduled
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1
        self.expected_down = False

    def kill(self) -> None:
        """SIGKILL the process and everything in its session (no graceful anything)."""
        self.expected_down = True
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc is not None:  # what a SIGTERMed parent left behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)


class Fleet:
    """redis (job store and broker, append-only file fsynced always), tritonserver, the API,
    a bulk worker, a small-job worker and a webhooks worker, as `make up` runs them."""

    def __init__(self, workdir: Path, env: dict[str, str], ports: dict[str, int]) -> None:
        self.workdir, self.ports = workdir, ports
        self.crashes: list[dict[str, object]] = []  # exits nobody caused (watch)
        self._watching = threading.Event()
        r = ports["redis"]
        (workdir / "redis").mkdir(parents=True, exist_ok=True)
        http, grpc, metrics = ports["triton_http"], ports["triton_grpc"], ports["triton_metrics"]
        api_env = {**env, "DOCQ_API_PORT": str(ports["api"])}

        def worker(queues: str, name: str, pool: str, n: int) -> list[str]:
            argv = stack.worker(queues, name, concurrency=n, pool=pool, log_level="INFO")
            return [*argv, "--without-gossip", "--without-mingle"]

        def log(name: str) -> Path:
            return workdir / f"{name}.log"

        def worker_ready(name: str) -> Callable[[], bool]:
            # "ready." once per start: as many as the starts so far
            return lambda: log(name).read_bytes().count(b"ready.") >= self[name].starts

        self.services = {
            s.name: s
            for s in [
                Service(
                    "redis",
                    stack.redis(r, workdir / "redis"),
                    env,
                    log("redis"),
                    lambda: bool(redis.Redis(port=r, socket_timeout=1).ping()),
                ),
                Service(
                    "triton",
                    stack.triton(
                        *("--http-port", str(http), "--grpc-port", str(grpc)),
                        *("--metrics-port", str(metrics)),
                        *("--model-repository", str(REPO / "model_repository")),
                    ),
                    env,
                    log("triton"),
                    lambda: triton_ready(f"127.0.0.1:{grpc}"),
                ),
                Service(
                    "bulk",
                    worker("cpu", "bulk@%h", "threads", SHARD_THREADS),
                    env,
                    log("bulk"),
                    worker_ready("bulk"),
                ),
                Service(
                    "priority",
                    worker("cpu-priority", "priority@%h", "threads", SHARD_THREADS),
                    env,
                    log("priority"),
                    worker_ready("priority"),
                ),
                Service(
                    "webhooks",
                    worker("webhooks", "webhooks@%h", "prefork", 2),
                    env,
                    log("webhooks"),
                    worker_ready("webhooks"),
                ),
                Service(
                    "api",
                    stack.api(),
                    api_env,
                    log("api"),
                    lambda: httpx.get(f"{self.api_url}/healthz", timeout=1).status_code == 200,
                ),
            ]
        }

    def watch(self) -> None:
        """Start what a supervisor also does: start again, after a second, any process that
        exited by itself (a Celery worker's "Unrecoverable error" when Redis dies under it),
        recorded in `crashes`."""
        self._watching.clear()

        def loop() -> None:
            while not self._watching.wait(1):
                for name, service in self.services.items():
                    proc = service.proc
                    if proc is None or proc.poll() is None or service.expected_down:
                        continue
                    if service.lock.locked():
                        continue
                    rc = proc.returncode
                    log.warning("%s exited by itself (%s); starting it again", name, rc)
                    self.crashes.append({"at": time.time(), "process": name, "rc": rc})
                    service.expected_down = True
                    threading.Thread(target=self._restart, args=(name, 1.0), daemon=True).start()

        threading.Thread(target=loop, name="supervisor", daemon=True).start()

    def _restart(self, name: str, delay_s: float) -> None:
        time.sleep(delay_s)
        started = time.monotonic()
        self.start(name)
        log.info("%s is up again (%.1f s to start)", name, time.monotonic() - started)

    def __getitem__(self, name: str) -> Service:
        return self.services[name]

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['api']}"

    def start(self, name: str, timeout: float = 300) -> None:
        service = self[name]
        with service.lock:
            service.start()
            wait_for(service.ready, timeout, f"{name} (log: {service.log})", service.proc)

    def start_all(self) -> None:
        for name in self.services:
            self.start(name)

    def kill_then_restart(self, name: str, delay_s: float) -> threading.Thread:
        """SIGKILL `name` now and start it again after `delay_s` (in a thread), as a
        supervisor (systemd, Kubernetes) would."""
        service = self[name]
        with service.lock:
            service.kill()
        thread = threading.Thread(
            target=self._restart, args=(name, delay_s), name=f"restart-{name}", daemon=True
        )
        thread.start()
        return thread

    def stop_all(self) -> None:
        self._watching.set()  # what is stopped now stays stopped
        for service in reversed(list(self.services.values())):
            service.stop()


def triton_ready(url: str) -> bool:
    client = grpcclient.InferenceServerClient(url)
    try:
        return bool(client.is_server_ready()) and bool(client.is_model_ready("doc-type"))
    finally:
        client.close()


def fixed_ports() -> dict[str, int]:
    """Ports chosen once, so that a restarted process comes back where the others look."""
    names = ("redis", "triton_http", "triton_grpc", "triton_metrics", "api")
    return {name: free_port() for name in names}
