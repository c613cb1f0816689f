"""The stack's processes (stack.py) started on free ports, for the tests and the bench."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devstack import stack
from devstack.stack import REPO
from docq.config import Settings
from docq.model_control import ModelState, statuses


def settings_env(settings: Settings) -> dict[str, str]:
    """This process's environment with `settings` as the DOCQ_* variables that the API, the
    workers and Triton's model read: what a started process needs to see the same settings."""
    env = dict(os.environ)
    for name, value in settings.model_dump().items():
        if value is not None:
            env[f"DOCQ_{name.upper()}"] = str(value)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoadFailed(RuntimeError):
    """Models tritonserver was asked to load failed to load: waiting longer cannot help.
    `failed`: each one's name and Triton's reason."""

    def __init__(self, failed: dict[str, str], log: Path) -> None:
        reasons = "; ".join(f"{name}: {reason}" for name, reason in failed.items())
        super().__init__(f"tritonserver could not load {reasons} (log: {log})")
        self.failed = failed


def wait_for(
    check: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it was ready")
        try:
            if check():
                return
        except LoadFailed:
            raise
        except Exception:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{what} not ready after {timeout}s")


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def redis_server(workdir: Path, port: int | None = None) -> Iterator[str]:
    """A throwaway redis-server, configured as make up's (append-only file); yields its URL.

    `port` (default: a free one) and `workdir` fixed start a server again on the data and
    at the address of one that died."""
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(stack.redis(port, workdir), stdout=subprocess.DEVNULL)
    try:
        import redis

        wait_for(lambda: redis.Redis(port=port).ping(), 20, "redis-server", proc)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc)


@contextmanager
def triton_server(
    repository: Path,
    log: Path,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    ports: tuple[int, int, int] | None = None,
    *,
    models: Sequence[str] = (),
    timeout: float = 180,
) -> Iterator[str]:
    """A real tritonserver serving `repository`; yields its gRPC address.

    `extra`: launcher options and tritonserver arguments (e.g. `--model-control explicit`);
    `env`: the launcher's environment (DOCQ_* settings such as DOCQ_MODEL_STARTUP);
    `ports`: its HTTP, gRPC and metrics ports (default: free ones), e.g. to start a server
    again at the address of one that died;
    `models`: exactly these models loaded at start (explicit model control, through the
    launcher's own DOCQ_MODEL_* settings), and each of them ready before this yields;
    `timeout`: the seconds the server (and `models`) may take to be ready: a bench's large
    models take minutes to load and warm.
    """
    import tritonclient.grpc as grpcclient

    if models:
        env = {
            **(os.environ if env is None else env),
            "DOCQ_MODEL_CONTROL": "explicit",
            "DOCQ_MODEL_STARTUP": ",".join(models),
            "DOCQ_MODEL_PINNED": "",
        }
    http, grpc, metrics = ports or (free_port(), free_port(), free_port())
    cmd = stack.triton(
        "--http-port",
        str(http),
        "--grpc-port",
        str(grpc),
        "--metrics-port",
        str(metrics),
        "--model-repository",
        str(repository),
        *(extra or []),
    )
    with log.open("wb") as out:
        # A process group of its own (the launcher execs tritonserver, so its pid is the
        # group's): the Python-backend stubs it starts are in it, and are ended with it
        # even when a test SIGKILLed the server and left them behind, orphaned.
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True
        )
    url = f"127.0.0.1:{grpc}"
    try:
        client = grpcclient.InferenceServerClient(url)

        def ready() -> bool:
            if client.is_server_ready() and all(client.is_model_ready(m) for m in models):
                return True
            # A model whose load failed stays so: say why now, not after `timeout` (a GPU
            # bench waited out its load timeout on one, 2026-12-03).
            if failed := failed_models(client, models):
                raise LoadFailed(failed, log)
            return False

        wait_for(ready, timeout, f"tritonserver (log: {log})", proc)
        client.close()
        yield url
    finally:
        stop(proc, 30)
        end_group(proc.pid)


def failed_models(client: Any, names: Sequence[str]) -> dict[str, str]:
    """Those of `names` whose last load failed, and why."""
    if not names:
        return {}
    found = statuses(client.get_model_repository_index(as_json=True).get("models", []))
    failed = [n for n in names if n in found and found[n].state is ModelState.FAILED]
    return {n: found[n].reason or "" for n in failed}


def end_group(pgid: int) -> None:
    """SIGKILL what is left of a process group (nothing, if it ended whole)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@contextmanager
def celery_worker(
    env: dict[str, str],
    log: Path,
    queues: str = "cpu",
    name: str = "cpu",
    concurrency: int = 1,
    pool: str = "threads",
    ready_s: float = 60,
) -> Iterator[subprocess.Popen]:
    """A real Celery worker process consuming `queues`: `concurrency` threads (the shard
    workers' pool, sharing one batcher) or prefork children (the webhooks worker's), at the
    level of `env`'s DOCQ_LOG_LEVEL (the process validates it as it starts), ready within
    `ready_s` (a machine busy with other work takes longer to import it)."""
    level = env.get("DOCQ_LOG_LEVEL", "INFO").upper()
    cmd = [
        *stack.worker(
            queues, f"{name}-{os.getpid()}", concurrency=concurrency, pool=pool, log_level=level
        ),
        "--without-gossip",
        "--without-mingle",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    try:
        wait_for(
            lambda: b"ready." in log.read_bytes(), ready_s, f"celery worker (log: {log})", proc
        )
        yield proc
    finally:
        stop(proc, 30)


@contextmanager
def api_server(
    env: dict[str, str], log: Path, tree: Path = REPO, ready_s: float = 60
) -> Iterator[str]:
    """The API as a process of its own on a free port; yields its base URL. `tree`: the
    source tree it runs from (an older commit's, to time its API beside this one)."""
    import httpx

    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            stack.api(),
            cwd=tree,
            env={**env, "DOCQ_API_PORT": str(port)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, ready_s, "api", proc)
        yield url
    finally:
        stop(proc)


@contextmanager
def flower_server(
    env: dict[str, str], log: Path, login: tuple[str, str], timeout: float = 300
) -> Iterator[str]:
    """Flower as `make up` runs it (stack.flower, behind the basic-auth `login`) on a free
    port; yields its URL once it answers (a slow start on a busy machine is no failure)."""
    import httpx

    port = free_port()
    env = {**env, "FLOWER_BASIC_AUTH": ":".join(login)}  # in the environment, as devstack
    with log.open("wb") as out:
        proc = subprocess.Popen(
            stack.flower(port), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(url).status_code == 401, timeout, f"flower (log: {log})", proc)
        yield url
    finally:
        stop(proc)


@contextmanager
def baseline_server(
    env: dict[str, str], log: Path, workers: int
) -> Iterator[tuple[str, subprocess.Popen]]:
    """The bench's old architecture (stack.baseline) on a free port, ready once a first
    document is classified (each worker loads the model: up to 300 s); yields its URL and
    the Gunicorn master."""
    import httpx

    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            stack.baseline(port, workers), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    probe = {"id": "probe", "text": "warm-up"}
    try:
        wait_for(
            lambda: httpx.post(f"{url}/classify", json=probe, timeout=30).status_code == 200,
            300,
            f"baseline server (log: {log})",
            proc,
        )
        yield url, proc
    finally:
        stop(proc)
