"""The stack both pipeline benchmarks run docq on: redis, tritonserver, the API, the
small-job lane's worker, bulk workers and extract workers from devstack/, on free ports, as
`make up` runs them; and the bench's tenant and settings as the processes' environment."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.procs import CpuMeter, listener, tree
from devstack import services
from devstack.credentials import tenant_headers
from devstack.services import api_server, celery_worker, free_port, redis_server, triton_server
from devstack.stack import EXTRACT_THREADS, SHARD_THREADS, TRITON_NICE, WORKER_NICE
from docq.config import Settings


class Stack:
    """redis, tritonserver, the API, the small-job lane's worker, `bulk_workers` bulk workers
    and, with `extract`, an extract worker (files read into text), each started by
    devstack/services.py as the Procfile runs it, with its metrics endpoint.

    The CPU bench takes it as it is: Triton at TRITON_NICE, so that batch inference yields
    the CPU to request handling on a shared box, as the local stack does. The GPU bench
    (bench/gpu/) names its `model` (served, pinned and the default) and leaves Triton at
    nice 0 (`triton_nice=None`: there Triton feeds a GPU, and 12 busy workers at nice 0
    would starve it at nice 10). Workers start side by side: a dozen, one after the other,
    take a minute."""

    def __init__(
        self,
        repo: Path,
        workdir: Path,
        shard_size: int,
        bulk_workers: int = 1,
        *,
        extract: bool = False,
        ready_s: float = 60,
        model: str | None = None,
        triton_nice: int | None = TRITON_NICE,
    ) -> None:
        self.repo, self.workdir, self.shard_size = repo, workdir, shard_size
        self.ready_s, self.model, self.triton_nice = ready_s, model, triton_nice
        self.bulk_workers, self._extract_at_start = bulk_workers, 1 if extract else 0
        self._extract: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Stack:
        self._stack = ExitStack()
        try:
            self._start()
            self.bulk_ports = [free_port() for _ in range(self.bulk_workers)]
            names = [f"bulk{i}" for i in range(self.bulk_workers)]
            self._bulk = self._workers("cpu", names, SHARD_THREADS, self.bulk_ports)
            self.add_extract_workers(self._extract_at_start)
        except BaseException:
            self._stack.close()
            raise
        return self

    def _start(self) -> None:
        # The GPU bench's model: the uploads' default, loaded when Triton starts and pinned.
        served = ("default_model", "model_startup", "model_pinned") if self.model else ()
        models = {f"DOCQ_{name.upper()}": str(self.model) for name in served[1:]}
        redis_url = self._stack.enter_context(redis_server(self.workdir / "redis"))
        self.triton_url = self._stack.enter_context(
            triton_server(self.repo, self.workdir / "triton.log", env={**os.environ, **models})
        )
        self.triton_pid = listener(int(self.triton_url.rsplit(":", 1)[1]))
        if self.triton_nice is not None:
            for pid in tree(self.triton_pid):
                os.setpriority(os.PRIO_PROCESS, pid, self.triton_nice)
        fields: dict[str, Any] = {name: self.model for name in served}
        self.settings = Settings(
            redis_url=redis_url,
            triton_grpc_url=self.triton_url,
            model_repository=self.repo,
            shard_size=self.shard_size,
            **fields,
        )
        self.headers = tenant_headers(self.settings, "bench")  # a tenant of its own
        self.env = services.settings_env(self.settings)
        (self.priority,) = self._workers("cpu-priority", ["priority"], SHARD_THREADS)
        self.url = self._stack.enter_context(api_server(self.env, self.workdir / "api.log"))
        self.api_pid = listener(int(self.url.rsplit(":", 1)[1]))

    def _workers(
        self, queue: str, names: list[str], threads: int, ports: list[int] | None = None
    ) -> list[subprocess.Popen[bytes]]:
        """Celery workers of `queue`, one per name, started side by side and niced."""
        ports = ports or [free_port() for _ in names]
        managers = [
            celery_worker(
                {**self.env, "DOCQ_WORKER_METRICS_PORT": str(port)},
                self.workdir / f"{name}.log",
                queue,
                name,
                threads,
                ready_s=self.ready_s,
            )
            for name, port in zip(names, ports, strict=True)
        ]
        with ThreadPoolExecutor(max(1, len(names))) as pool:
            procs = list(pool.map(self._stack.enter_context, managers))
        for proc in procs:
            os.setpriority(os.PRIO_PROCESS, proc.pid, WORKER_NICE)
        return procs

    def add_extract_workers(self, n: int) -> None:
        """Start `n` extract workers (uploaded files read into text), side by side, as the
        local stack's `extract` process (EXTRACT_THREADS shards each)."""
        names = [f"extract{len(self._extract) + i}" for i in range(n)]
        self._extract += self._workers("extract", names, EXTRACT_THREADS)

    def meter(self) -> CpuMeter:
        """CPU seconds of the API, Triton and each worker (extract workers with their reading
        children)."""
        roots = {"api": self.api_pid, "triton": self.triton_pid}
        for i, proc in enumerate(self._bulk):
            roots[f"bulk worker {i}"] = proc.pid
        roots["priority worker"] = self.priority.pid
        for i, proc in enumerate(self._extract):
            roots[f"extract worker {i}"] = proc.pid
        return CpuMeter(roots)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
