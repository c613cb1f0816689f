"""The stack the CPU bench runs docq on: redis, tritonserver, the workers and the API from
devstack/, on free ports, as `make up` runs them; and what both benches' stacks share (the
bench's tenant, the settings as the processes' environment, what a run reads from a stack)."""

from __future__ import annotations

import os
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Protocol

from bench.procs import CpuMeter, find, listener, tree
from devstack.services import api_server, celery_worker, free_port, redis_server, triton_server
from devstack.stack import EXTRACT_THREADS, SHARD_THREADS, TRITON_NICE, WORKER_NICE
from docq.config import Settings
from docq.store import connection
from docq.store.tenants import Tenants


class Running(Protocol):
    """What the runs read from a started stack (Stack here, bench.gpu.stack.GpuStack)."""

    url: str
    headers: dict[str, str]
    triton_url: str
    repo: Path
    settings: Settings
    triton_pid: int

    @property
    def bulk_workers(self) -> int: ...

    @property
    def bulk_ports(self) -> list[int]: ...

    @property
    def workers(self) -> list[subprocess.Popen[bytes]]: ...

    def meter(self) -> CpuMeter: ...


def tenant_headers(settings: Settings) -> dict[str, str]:
    """The bench is one tenant with a key of its own, as a client application would be."""
    tenants = Tenants(connection.connect(settings.redis_url), secret=settings.api_key_secret)
    return {"Authorization": f"Bearer {tenants.create_key('bench')[1]}"}


def settings_env(settings: Settings) -> dict[str, str]:
    """This process's environment with `settings` as the DOCQ_* variables the API and the
    workers read."""
    env = dict(os.environ)
    for name, value in settings.model_dump().items():
        if value is not None:
            env[f"DOCQ_{name.upper()}"] = str(value)
    return env


class Stack:
    """redis, tritonserver, `bulk_workers` bulk Celery workers, a priority worker, with
    `extract` the extract worker (files read into text) and the API on free ports, started
    as the local stack starts them (devstack/)."""

    def __init__(
        self,
        repo: Path,
        workdir: Path,
        shard_size: int,
        bulk_workers: int = 1,
        *,
        extract: bool = False,
        ready_s: float = 60,
    ) -> None:
        self.repo, self.workdir, self.shard_size = repo, workdir, shard_size
        self.bulk_workers, self.extract, self.ready_s = bulk_workers, extract, ready_s
        self.extract_worker: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Stack:
        self._stack = ExitStack()
        redis_url = self._stack.enter_context(redis_server(self.workdir / "redis"))
        self.triton_url = self._stack.enter_context(
            triton_server(self.repo, self.workdir / "triton.log")
        )
        self.settings = Settings(
            redis_url=redis_url,
            triton_grpc_url=self.triton_url,
            model_repository=self.repo,
            shard_size=self.shard_size,
        )
        self.headers = tenant_headers(self.settings)
        env = settings_env(self.settings)
        # As the Procfile runs them: workers for bulk jobs, one for the small-job lane,
        # each with its metrics endpoint.
        lanes = [("cpu", f"bulk{i}") for i in range(self.bulk_workers)]
        lanes.append(("cpu-priority", "priority"))
        self.metrics_ports = [free_port() for _ in lanes]
        self.workers = [
            self._stack.enter_context(
                celery_worker(
                    {**env, "DOCQ_WORKER_METRICS_PORT": str(port)},
                    self.workdir / f"{name}.log",
                    queue,
                    name,
                    SHARD_THREADS,
                    ready_s=self.ready_s,
                )
            )
            for port, (queue, name) in zip(self.metrics_ports, lanes, strict=True)
        ]
        self.bulk_ports = self.metrics_ports[: self.bulk_workers]
        if self.extract:  # as the Procfile's `extract` process
            port = str(free_port())
            self.extract_worker = self._stack.enter_context(
                celery_worker(
                    {**env, "DOCQ_WORKER_METRICS_PORT": port},
                    self.workdir / "extract.log",
                    "extract",
                    "extract",
                    EXTRACT_THREADS,
                    ready_s=self.ready_s,
                )
            )
            os.setpriority(os.PRIO_PROCESS, self.extract_worker.pid, WORKER_NICE)
        self.url = self._stack.enter_context(api_server(env, self.workdir / "api.log"))
        self.api_pid = listener(int(self.url.rsplit(":", 1)[1]))
        port = self.triton_url.rsplit(":", 1)[1]
        self.triton_pid = find("bin/tritonserver", f"--grpc-port={port}")
        # Batch inference yields the CPU to request handling on this shared box, as the
        # local stack does; on a real deployment the API and Triton have hosts of their own.
        for pid in tree(self.triton_pid):
            os.setpriority(os.PRIO_PROCESS, pid, TRITON_NICE)
        for worker in self.workers:
            os.setpriority(os.PRIO_PROCESS, worker.pid, WORKER_NICE)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def meter(self) -> CpuMeter:
        roots = {"api": self.api_pid, "triton": self.triton_pid}
        for i, worker in enumerate(self.workers[:-1]):
            roots[f"bulk worker {i}"] = worker.pid
        roots["priority worker"] = self.workers[-1].pid
        return CpuMeter(roots)
