"""Every process of the local stack, described once.

The Procfile runs each of them as `python -m devstack NAME` with the default ports; the
test fixtures and the bench start the same command lines on free ports (services.py). A
change here (a worker's pool, a Redis flag) reaches all three.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN_DIR = REPO / ".run"  # make up's data (Redis AOF); ignored by git

# Threads of one shard worker process: its shards share one batcher (cross-shard batches)
# and one gRPC channel.
SHARD_THREADS = 4
# Shards one extract worker reads at once; each reads DOCQ_READ_FILES_AT_ONCE files at once
# in child processes (docq.extract), so this times that is the cores it may take.
EXTRACT_THREADS = 2
# On one shared box the API answers first, then the workers, then batch inference (nice).
WORKER_NICE = 5
TRITON_NICE = 10
# Where the webhooks worker's prefork children write their metrics; emptied at its start.
# The same path in deploy/ (/tmp is a writable emptyDir in the pods).
WEBHOOKS_METRICS_DIR = "/tmp/docq-webhooks-metrics"


@dataclass(frozen=True)
class Process:
    """One process of the stack: its command line, extra environment and niceness;
    `config`: a file it needs, written afresh before it starts (a Sentinel's, which it
    rewrites as it learns)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    nice: int = 0
    config: tuple[Path, str] | None = None


# The Sentinel topology (DOCQ_REDIS_MODE=sentinel make up; issue 22): a master, one replica
# of it and three Sentinels, a quorum of two of which declares the master down and promotes
# the replica. Every docq process reaches Redis through the Sentinels (a sentinel:// URL,
# docq/config_redis.py) and an upload is answered 202 once the replica has it (Redis WAIT).
# honcho stops the whole stack when one process ends, so it always starts whole, in these
# roles: after a failover, the next `make up` starts 6379 as the master again, on its own
# data (what only the promoted 6380 took meanwhile is resynced away). A deployment keeps
# the roles the Sentinels chose (deploy/k8s-sentinel: each pod asks them as it starts).
SENTINEL_MASTER = "docq"
SENTINEL_QUORUM = 2
SENTINEL_PORTS = (26379, 26380, 26381)
REPLICA_PORT = 6380
# How long a master may not answer before a Sentinel thinks it down: shorter fails over
# sooner, too short fails over a master that is merely busy (a long AOF rewrite, a pause).
DOWN_AFTER_MS = 5000
# How long a failover may take before another Sentinel tries (Redis' default: 3 minutes).
FAILOVER_TIMEOUT_MS = 60000


def redis(port: int, data_dir: Path, host: str = "127.0.0.1") -> list[str]:
    """redis-server on `host` (loopback, or a fleet host's address: devstack/fleet) with an
    append-only file fsynced at every write: an upload answered 202 survives a crash of
    Redis (at the cost of one fsync per write)."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError("redis-server is not installed (make up / make test install it)")
    return [
        exe,
        "--bind",
        host,
        "--port",
        str(port),
        "--dir",
        str(data_dir),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
        *_protected(host),
    ]


def _protected(host: str) -> list[str]:
    """Redis' protected mode (no password: loopback clients only) stays on on loopback;
    on another address (a fleet host, devstack/fleet, on a bridge private to this machine)
    it would refuse every other host, so it is off there (deploy/ sets requirepass)."""
    return [] if host == "127.0.0.1" else ["--protected-mode", "no"]


def redis_replica(
    port: int, data_dir: Path, master_port: int, host: str = "127.0.0.1", master_host: str = ""
) -> list[str]:
    """A replica of the redis-server at `master_host`:`master_port` (default: on `host`),
    configured as the master is (it becomes the master after a failover)."""
    return [*redis(port, data_dir, host), "--replicaof", master_host or host, str(master_port)]


def sentinel_config(
    master_port: int,
    *,
    down_after_ms: int = DOWN_AFTER_MS,
    failover_timeout_ms: int = FAILOVER_TIMEOUT_MS,
    master_host: str = "127.0.0.1",
) -> str:
    """The first configuration of a Sentinel watching the master at `master_host`:
    `master_port` (the address every Sentinel, replica and client can reach it at: the
    Sentinels hand it out as it is)."""
    m = SENTINEL_MASTER
    return "\n".join(
        [
            f"sentinel monitor {m} {master_host} {master_port} {SENTINEL_QUORUM}",
            f"sentinel down-after-milliseconds {m} {down_after_ms}",
            f"sentinel failover-timeout {m} {failover_timeout_ms}",
            f"sentinel parallel-syncs {m} 1",
            "",
        ]
    )


def sentinel(port: int, config: Path, host: str = "127.0.0.1") -> list[str]:
    """A Redis Sentinel on `host`: the redis-server binary in Sentinel mode (what
    Debian's redis-sentinel package runs), with `config` its own, rewritable file."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError("redis-server is not installed (make up / make test install it)")
    return [exe, str(config), "--sentinel", "--bind", host, "--port", str(port), *_protected(host)]


def sentinel_url(
    ports: tuple[int, ...] | list[int], db: int = 0, hosts: tuple[str, ...] = ()
) -> str:
    """The sentinel:// URL (kombu's form) that names these Sentinels: at `ports` on
    loopback, or at `hosts` (each beside its port) across hosts."""
    at = hosts or ("127.0.0.1",) * len(ports)
    return ";".join(f"sentinel://{h}:{p}" for h, p in zip(at, ports, strict=True)) + f"/{db}"


def triton(*args: str) -> list[str]:
    """The tritonserver launcher (serving/server.py); `args` are its options."""
    return [sys.executable, "-m", "serving.server", *args]


def api() -> list[str]:
    return [sys.executable, "-m", "api.main"]


def worker(
    queues: str, name: str, *, concurrency: int, pool: str, log_level: str = "INFO"
) -> list[str]:
    """A Celery worker: `threads` for shard workers (shards share a batcher), `prefork`
    for the webhooks worker (deliveries are independent and block on the network);
    `log_level` is DOCQ_LOG_LEVEL's (Celery's --loglevel sets its own and docq's loggers)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.app",
        "worker",
        "-Q",
        queues,
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "--hostname",
        f"{name}@%h",
        "--loglevel",
        log_level,
    ]


def flower(port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.app",
        "flower",
        "--address=127.0.0.1",
        f"--port={port}",
    ]


def local_stack(log_level: str = "INFO", redis_mode: str = "single") -> dict[str, Process]:
    """What `make up` runs, by Procfile name, on the default ports (the settings' own);
    `log_level`: the workers' (DOCQ_LOG_LEVEL, which `python -m devstack` passes);
    `redis_mode` (DOCQ_REDIS_MODE): `single`, one redis-server, or `sentinel`, the topology
    above, with the docq processes pointed at its Sentinels."""
    processes = _docq_processes(log_level)
    if redis_mode == "single":
        return {"redis": Process(redis(6379, RUN_DIR / "redis")), **processes}
    ha = {"DOCQ_REDIS_URL": sentinel_url(SENTINEL_PORTS), "DOCQ_REDIS_WAIT_REPLICAS": "1"}
    return {
        "redis": Process(redis(6379, RUN_DIR / "redis")),
        "redis-replica": Process(redis_replica(REPLICA_PORT, RUN_DIR / "redis-replica", 6379)),
        **{
            f"sentinel-{i}": Process(
                sentinel(port, RUN_DIR / f"sentinel-{i}" / "sentinel.conf"),
                config=(RUN_DIR / f"sentinel-{i}" / "sentinel.conf", sentinel_config(6379)),
            )
            for i, port in enumerate(SENTINEL_PORTS, 1)
        },
        **{name: replace(p, env={**p.env, **ha}) for name, p in processes.items()},
    }


def all_processes() -> set[str]:
    """The names of every process some mode of the local stack runs (the Procfile's)."""
    return set(local_stack()) | set(local_stack(redis_mode="sentinel"))


def _docq_processes(log_level: str) -> dict[str, Process]:
    return {
        "triton": Process(triton(), nice=TRITON_NICE),
        "api": Process(api()),
        "worker": Process(
            # `cpu`: the bulk queue with its DOCQ_BULK_LANES tenant lanes (workers/app.py)
            worker("cpu", "cpu", concurrency=SHARD_THREADS, pool="threads", log_level=log_level),
            {"DOCQ_WORKER_METRICS_PORT": "9101"},
            WORKER_NICE,
        ),
        "priority": Process(
            worker(
                "cpu-priority",
                "priority",
                concurrency=SHARD_THREADS,
                pool="threads",
                log_level=log_level,
            ),
            {"DOCQ_WORKER_METRICS_PORT": "9102"},
            WORKER_NICE,
        ),
        "extract": Process(
            # files (PDF, scans, DOCX, HTML) read into text before their shards are classified
            worker(
                "extract",
                "extract",
                concurrency=EXTRACT_THREADS,
                pool="threads",
                log_level=log_level,
            ),
            {"DOCQ_WORKER_METRICS_PORT": "9104"},
            WORKER_NICE,
        ),
        "webhooks": Process(
            worker("webhooks", "webhooks", concurrency=4, pool="prefork", log_level=log_level),
            # prefork children count in prometheus-client's multiprocess mode (workers/metrics.py)
            {"DOCQ_WORKER_METRICS_PORT": "9103", "PROMETHEUS_MULTIPROC_DIR": WEBHOOKS_METRICS_DIR},
        ),
        "flower": Process(flower(5555)),
    }


def baseline(port: int, workers: int) -> list[str]:
    """The old architecture the bench compares docq with (bench/baseline/app.py): Gunicorn
    with `workers` Uvicorn workers, each holding its own copy of the model; not part of
    `make up`."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "bench.baseline.app:app",
        "-k",
        "uvicorn_worker.UvicornWorker",
        "-w",
        str(workers),
        "-b",
        f"127.0.0.1:{port}",
        "--timeout",
        "300",
    ]
