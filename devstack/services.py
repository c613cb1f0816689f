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
from dataclasses import dataclass, field
from pathlib import Path

from devstack import stack
from devstack.stack import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


@dataclass
class SentinelGroup:
    """A running master, its replica and three Sentinels (stack.py's topology)."""

    url: str  # sentinel:// (what DOCQ_REDIS_URL is set to)
    sentinel_ports: list[int]
    servers: dict[int, subprocess.Popen] = field(default_factory=dict)  # port -> redis-server
    data: dict[int, Path] = field(default_factory=dict)  # port -> its data directory

    def master_port(self) -> int | None:
        """The master's port as the first Sentinel that answers sees it, else None."""
        import redis

        for port in self.sentinel_ports:
            try:
                found = redis.Redis(port=port, socket_timeout=1).sentinel_get_master_addr_by_name(
                    stack.SENTINEL_MASTER
                )
            except redis.RedisError:
                continue
            return int(found[1]) if isinstance(found, tuple) else None
        return None

    def start(self, port: int, replica_of: int | None = None) -> None:
        """Start the redis-server of `port` (again: on its data), as a replica or not."""
        argv = (
            stack.redis(port, self.data[port])
            if replica_of is None
            else stack.redis_replica(port, self.data[port], replica_of)
        )
        self.servers[port] = subprocess.Popen(argv, stdout=subprocess.DEVNULL)


@contextmanager
def redis_sentinels(workdir: Path, *, down_after_ms: int = 1000) -> Iterator[SentinelGroup]:
    """stack.py's Sentinel topology on free ports, failing over fast (`down_after_ms`):
    yields once the replica is in sync and every Sentinel knows the others and the replica."""
    import redis

    master, replica = free_port(), free_port()
    group = SentinelGroup(url="", sentinel_ports=[free_port() for _ in range(3)])
    sentinels = []
    try:
        for port, of in ((master, None), (replica, master)):
            group.data[port] = workdir / f"redis-{port}"
            group.data[port].mkdir(parents=True, exist_ok=True)
            group.start(port, of)
        # Sentinels started once the replica is in sync see it in their first INFO of the
        # master, instead of the next one, 10 s later.
        wait_for(
            lambda: redis.Redis(port=master).info("replication")["slave0"]["state"] == "online",
            30,
            "the replica in sync",
        )
        config = stack.sentinel_config(
            master, down_after_ms=down_after_ms, failover_timeout_ms=4 * down_after_ms
        )
        for port in group.sentinel_ports:
            conf = workdir / f"sentinel-{port}.conf"
            conf.write_text(config)
            sentinels.append(
                subprocess.Popen(stack.sentinel(port, conf), stdout=subprocess.DEVNULL)
            )
        group.url = stack.sentinel_url(group.sentinel_ports)

        def ready() -> bool:
            info = redis.Redis(port=master).info("replication")
            if info.get("slave0", {}).get("state") != "online":
                return False
            for port in group.sentinel_ports:
                seen = redis.Redis(port=port).sentinel_master(stack.SENTINEL_MASTER)
                if (
                    not isinstance(seen, dict)
                    or seen["num-slaves"] < 1
                    or seen["num-other-sentinels"] < 2
                ):
                    return False
            return True

        wait_for(ready, 30, "the Sentinel topology")
        yield group
    finally:
        for proc in [*sentinels, *group.servers.values()]:
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
            return bool(client.is_server_ready()) and all(client.is_model_ready(m) for m in models)

        wait_for(ready, timeout, f"tritonserver (log: {log})", proc)
        client.close()
        yield url
    finally:
        stop(proc, 30)
        end_group(proc.pid)


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
) -> Iterator[subprocess.Popen]:
    """A real Celery worker process consuming `queues`: `concurrency` threads (the shard
    workers' pool, sharing one batcher) or prefork children (the webhooks worker's), at the
    level of `env`'s DOCQ_LOG_LEVEL (the process validates it as it starts)."""
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
        wait_for(lambda: b"ready." in log.read_bytes(), 60, f"celery worker (log: {log})", proc)
        yield proc
    finally:
        stop(proc, 30)


@contextmanager
def api_server(env: dict[str, str], log: Path, tree: Path = REPO) -> Iterator[str]:
    """The API as a process of its own on a free port; yields its base URL. `tree`: the
    source tree it runs from (bench/accept.py runs an older commit's beside this one)."""
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
        wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, 60, "api", proc)
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
