"""The chaos run's stack: every process of devstack/ on fixed ports of one host, under a
supervisor (devstack/supervisor.py) that starts again what ends by itself, and what the
chaos kills a short while after."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import redis

from devstack import stack
from devstack.services import free_port, stop, wait_for
from devstack.stack import REPO, SHARD_THREADS
from devstack.supervisor import Supervisor, triton_ready

log = logging.getLogger("chaos")
HOST = "local"


class Fleet(Supervisor):
    """redis (job store and broker, append-only file fsynced always), tritonserver, the API,
    a bulk worker, a small-job worker and a webhooks worker, as `make up` runs them."""

    def __init__(self, workdir: Path, env: dict[str, str], ports: dict[str, int]) -> None:
        super().__init__()
        self.workdir, self.env, self.ports = workdir, env, ports
        self.restarting: set[str] = set()  # killed, or ended: starting again
        self.threads: list[threading.Thread] = []
        (workdir / "redis").mkdir(parents=True, exist_ok=True)
        http, grpc, metrics = ports["triton_http"], ports["triton_grpc"], ports["triton_metrics"]

        def worker(queues: str, name: str, pool: str, n: int) -> list[str]:
            argv = stack.worker(queues, name, concurrency=n, pool=pool, log_level="INFO")
            return [*argv, "--without-gossip", "--without-mingle"]

        def worker_ready(name: str) -> Callable[[], bool]:
            # "ready." once per start: as many as the starts so far
            return lambda: self.log(name).read_bytes().count(b"ready.") >= self.starts[key(name)]

        r = ports["redis"]
        self.services: dict[str, tuple[list[str], Callable[[], bool]]] = {
            "redis": (
                stack.redis(r, workdir / "redis"),
                lambda: bool(redis.Redis(port=r, socket_timeout=1).ping()),
            ),
            "triton": (
                stack.triton(
                    *("--http-port", str(http), "--grpc-port", str(grpc)),
                    *("--metrics-port", str(metrics)),
                    *("--model-repository", str(REPO / "model_repository")),
                ),
                lambda: triton_ready(f"127.0.0.1:{grpc}"),
            ),
            "bulk": (worker("cpu", "bulk@%h", "threads", SHARD_THREADS), worker_ready("bulk")),
            "priority": (
                worker("cpu-priority", "priority@%h", "threads", SHARD_THREADS),
                worker_ready("priority"),
            ),
            "webhooks": (worker("webhooks", "webhooks@%h", "prefork", 2), worker_ready("webhooks")),
            "api": (
                stack.api(),
                lambda: httpx.get(f"{self.api_url}/healthz", timeout=1).status_code == 200,
            ),
        }

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['api']}"

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def start(self, name: str, timeout: float = 300) -> None:
        argv, ready = self.services[name]
        env = {**self.env, "DOCQ_API_PORT": str(self.ports["api"])}
        proc = self.spawn(key(name), argv, env, self.log(name))
        wait_for(ready, timeout, f"{name} (log: {self.log(name)})", proc)

    def start_all(self) -> None:
        for name in self.services:
            self.start(name)
        # a Celery worker's "Unrecoverable error" when Redis dies under it: after a second
        self.supervise(1.0, lambda _, name: self._restart_later(name, 1.0))

    def kill_then_restart(self, name: str, delay_s: float) -> None:
        """SIGKILL `name` now and start it again after `delay_s` (in a thread), as a
        supervisor (systemd, Kubernetes) would."""
        self.kill(key(name))
        self._restart_later(name, delay_s)

    def _restart_later(self, name: str, delay_s: float) -> None:
        def restart() -> None:
            time.sleep(delay_s)
            started = time.monotonic()
            self.start(name)
            log.info("%s is up again (%.1f s to start)", name, time.monotonic() - started)
            self.restarting.discard(name)

        self.restarting.add(name)
        thread = threading.Thread(target=restart, name=f"restart-{name}", daemon=True)
        thread.start()
        self.threads.append(thread)

    def join_restarts(self) -> None:
        for thread in self.threads:
            thread.join(600)

    def stop_all(self) -> None:
        self.stop_supervising()  # what is stopped now stays stopped
        for name in reversed(self.services):
            if key(name) in self.procs:
                stop(self.procs[key(name)])
                self.kill(key(name))  # what a SIGTERMed parent left behind


def key(name: str) -> tuple[str, str]:
    return (HOST, name)


def fixed_ports() -> dict[str, int]:
    """Ports chosen once, so that a restarted process comes back where the others look."""
    names = ("redis", "triton_http", "triton_grpc", "triton_metrics", "api")
    return {name: free_port() for name in names}
