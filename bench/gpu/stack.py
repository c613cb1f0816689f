"""The stack the GPU bench runs on: docq's processes from devstack/, bulk workers added and
stopped between runs."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from bench.gpu.model import MODEL
from bench.procs import CpuMeter, find, listener
from bench.stack import settings_env, tenant_headers
from devstack.services import (
    api_server,
    celery_worker,
    free_port,
    redis_server,
    stop,
    triton_server,
)
from devstack.stack import EXTRACT_THREADS, SHARD_THREADS, WORKER_NICE
from docq.config import Settings


class GpuStack:
    """redis, tritonserver, the API, the small-job lane's worker and a changing number of
    bulk workers, each started by devstack/services.py as bench.stack.Stack starts them,
    with what the runs read from a stack (bench.stack.Running).

    Unlike Stack it starts the bulk workers side by side (a dozen, one after the other,
    take a minute), can stop some between runs (the scaling table), and leaves Triton at
    nice 0: on this host Triton feeds a GPU, and 12 busy workers at nice 0 would starve it
    at nice 10 (the local stack nices it so that a shared 2-core box answers requests)."""

    def __init__(self, repo: Path, workdir: Path, shard_size: int) -> None:
        self.repo, self.workdir, self.shard_size = repo, workdir, shard_size
        self._bulk: list[tuple[subprocess.Popen[bytes], int]] = []
        self._extract: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> GpuStack:
        self._stack = ExitStack()
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def _start(self) -> None:
        models = {"DOCQ_MODEL_STARTUP": MODEL, "DOCQ_MODEL_PINNED": MODEL}
        redis_url = self._stack.enter_context(redis_server(self.workdir / "redis"))
        self.redis_pid = listener(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
        self.triton_url = self._stack.enter_context(
            triton_server(self.repo, self.workdir / "triton.log", env={**os.environ, **models})
        )
        port = self.triton_url.rsplit(":", 1)[1]
        self.triton_pid = find("bin/tritonserver", f"--grpc-port={port}")
        self.settings = Settings(
            redis_url=redis_url,
            triton_grpc_url=self.triton_url,
            model_repository=self.repo,
            shard_size=self.shard_size,
            default_model=MODEL,
            model_startup=MODEL,
            model_pinned=MODEL,
        )
        self.headers = tenant_headers(self.settings)
        self.env = settings_env(self.settings)
        self.priority_port = free_port()
        self.priority = self._stack.enter_context(
            celery_worker(
                {**self.env, "DOCQ_WORKER_METRICS_PORT": str(self.priority_port)},
                self.workdir / "priority.log",
                "cpu-priority",
                "priority",
                SHARD_THREADS,
            )
        )
        os.setpriority(os.PRIO_PROCESS, self.priority.pid, WORKER_NICE)
        self.url = self._stack.enter_context(api_server(self.env, self.workdir / "api.log"))
        self.api_pid = listener(int(self.url.rsplit(":", 1)[1]))

    def add_workers(self, n: int) -> None:
        """Start `n` more bulk workers, side by side."""
        first = len(self._bulk)
        ports = [free_port() for _ in range(n)]
        managers = [
            celery_worker(
                {**self.env, "DOCQ_WORKER_METRICS_PORT": str(port)},
                self.workdir / f"bulk{first + i}.log",
                "cpu",
                f"bulk{first + i}",
                SHARD_THREADS,
            )
            for i, port in enumerate(ports)
        ]
        with ThreadPoolExecutor(max(1, n)) as pool:
            procs = list(pool.map(self._stack.enter_context, managers))
        for proc, port in zip(procs, ports, strict=True):
            os.setpriority(os.PRIO_PROCESS, proc.pid, WORKER_NICE)
            self._bulk.append((proc, port))

    def add_extract_workers(self, n: int) -> None:
        """Start `n` extract workers (uploaded files read into text: bench.gpu.scans), side by
        side, as the local stack's `extract` process (EXTRACT_THREADS shards each)."""
        first = len(self._extract)
        managers = [
            celery_worker(
                {**self.env, "DOCQ_WORKER_METRICS_PORT": str(free_port())},
                self.workdir / f"extract{first + i}.log",
                "extract",
                f"extract{first + i}",
                EXTRACT_THREADS,
            )
            for i in range(n)
        ]
        with ThreadPoolExecutor(max(1, n)) as pool:
            procs = list(pool.map(self._stack.enter_context, managers))
        for proc in procs:
            os.setpriority(os.PRIO_PROCESS, proc.pid, WORKER_NICE)
            self._extract.append(proc)

    @property
    def extract_workers(self) -> int:
        return len(self._extract)

    def keep_workers(self, n: int) -> None:
        """Stop bulk workers until `n` run (a stopped worker's shards go to the others)."""
        while len(self._bulk) > n:
            proc, _ = self._bulk.pop()
            stop(proc, 30)

    @property
    def bulk_workers(self) -> int:
        return len(self._bulk)

    @property
    def bulk_ports(self) -> list[int]:
        return [port for _, port in self._bulk]

    @property
    def workers(self) -> list[subprocess.Popen[bytes]]:
        """The bulk workers, then the small-job lane's worker (as Stack lists them)."""
        return [proc for proc, _ in self._bulk] + [self.priority]

    def meter(self) -> CpuMeter:
        roots = {"api": self.api_pid, "triton": self.triton_pid, "redis": self.redis_pid}
        for i, (proc, _) in enumerate(self._bulk):
            roots[f"bulk worker {i}"] = proc.pid
        roots["priority worker"] = self.priority.pid
        for i, proc in enumerate(self._extract):  # with their reading children (docq.extract)
            roots[f"extract worker {i}"] = proc.pid
        return CpuMeter(roots)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
