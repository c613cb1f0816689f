"""What runs on which host of the fleet, described with the local stack's own command lines
(devstack/stack.py), each bound to its host's address.

    api        the API and the small-job lane (the priority worker)
    redis-1    the Redis master at first, and a Sentinel
    redis-2    a replica, and a Sentinel
    redis-3    a replica, and a Sentinel
    worker-1   a bulk, an extract and a webhooks worker
    worker-2   the same
    triton-1   a CPU tritonserver
    triton-2   another (both in DOCQ_TRITON_GRPC_URLS)
    client     no docq process: the uploading client and its webhook receiver

Two replicas, not stack.py's one: after the master's host is lost the promoted replica still
has a replica to confirm uploads (Redis WAIT), so uploads go on during the fault. Every
process reaches Redis through the three Sentinels; every port is the local stack's default,
on the host's own address, since hosts no longer share one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from devstack import stack
from devstack.fleet.net import Network

HOSTS = {
    "api": 10,
    "redis-1": 11,
    "redis-2": 12,
    "redis-3": 13,
    "worker-1": 21,
    "worker-2": 22,
    "triton-1": 31,
    "triton-2": 32,
    "client": 40,
}
REDIS_HOSTS = ("redis-1", "redis-2", "redis-3")
FIRST_MASTER = "redis-1"
TRITON_HOSTS = ("triton-1", "triton-2")
WORKER_HOSTS = ("worker-1", "worker-2")
REDIS_PORT = 6379
SENTINEL_PORT = 26379
API_PORT = 8080
TRITON_PORTS = (8000, 8001, 8002)  # HTTP, gRPC, metrics
# How long the Sentinels wait before calling a silent master down: a partition of the
# master's host is a failover this many seconds later.
DOWN_AFTER_MS = 3000

# Settings for a stack whose processes die under a job (the fleet's and bench/faults/chaos.py's):
# short leases, sweeps and backoffs, so that recovery is seconds, not the defaults' minutes;
# the visibility timeout stays at its hour (it must not be what recovers).
FAST_RECOVERY = {
    # 15 s: with 6 s, heartbeats of live workers on a loaded 2-core box came late, and their
    # shards were enqueued again while they still held them
    "DOCQ_SHARD_LEASE_S": "15",
    "DOCQ_SWEEP_INTERVAL_S": "1",
    "DOCQ_AUDIT_INTERVAL_S": "3",
    "DOCQ_TASK_RETRY_BACKOFF_S": "1",
    "DOCQ_TASK_RETRY_BACKOFF_MAX_S": "4",
    "DOCQ_TRITON_TIMEOUT_S": "30",
    "DOCQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",  # the receivers are on private addresses
    "DOCQ_WEBHOOK_TIMEOUT_S": "2",
    "DOCQ_WEBHOOK_BACKOFF_S": "1",
    "DOCQ_WEBHOOK_BACKOFF_MAX_S": "4",
    "DOCQ_WEBHOOK_MAX_ATTEMPTS": "100",
    "DOCQ_WEBHOOK_STALL_S": "5",
}
# Settings every docq process of the fleet gets (DOCQ_*): FAST_RECOVERY's, and a Redis
# socket timeout that bounds an answer when a host goes silent (no connection closes across
# a partition: a command waits for this long).
TUNING = {
    **FAST_RECOVERY,
    "DOCQ_REDIS_WAIT_REPLICAS": "1",
    # WAIT gives up (503) before the socket timeout would cut its connection
    "DOCQ_REDIS_WAIT_TIMEOUT_MS": "1000",
    "DOCQ_REDIS_SOCKET_TIMEOUT_S": "3",
    "DOCQ_SHARD_SIZE": "16",
    "DOCQ_TRITON_MAX_IN_FLIGHT": "2",
    "DOCQ_EXTRACT_PROCESSES": "1",
    "DOCQ_READ_FILES_AT_ONCE": "1",
}
# Threads per worker process: two tritonservers and seven Celery workers share 2 cores here.
THREADS = 2


@dataclass(frozen=True)
class Service:
    """One process on one host: its command line (stack.py's), extra environment and
    niceness; `ready` says how the controller knows it is up: `redis`, `sentinel`,
    `triton`, `http` (GET `path`), or `log` (Celery's "ready.")."""

    name: str
    host: str
    argv: list[str]
    ready: str
    env: dict[str, str] = field(default_factory=dict)
    nice: int = 0
    path: str = ""


@dataclass(frozen=True)
class Layout:
    """Every host's address and services, and the settings that cross hosts."""

    net: Network
    workdir: Path

    def address(self, host: str) -> str:
        return self.net.address(HOSTS[host])

    @property
    def addresses(self) -> dict[str, str]:
        return {host: self.address(host) for host in HOSTS}

    @property
    def redis_url(self) -> str:
        hosts = tuple(self.address(h) for h in REDIS_HOSTS)
        return stack.sentinel_url([SENTINEL_PORT] * len(hosts), hosts=hosts)

    @property
    def api_url(self) -> str:
        return f"http://{self.address('api')}:{API_PORT}"

    @property
    def triton_urls(self) -> list[str]:
        return [f"{self.address(h)}:{TRITON_PORTS[1]}" for h in TRITON_HOSTS]

    def data(self, host: str) -> Path:
        """The host's disk (logs, Redis' append-only file, a Sentinel's config)."""
        return self.workdir / host

    def sentinel_conf(self, host: str) -> Path:
        return self.data(host) / "sentinel.conf"

    def sentinel_config(self) -> str:
        return stack.sentinel_config(
            REDIS_PORT,
            master_host=self.address(FIRST_MASTER),
            down_after_ms=DOWN_AFTER_MS,
            failover_timeout_ms=4 * DOWN_AFTER_MS,
        )

    def env(self, host: str) -> dict[str, str]:
        """The DOCQ_* settings of a docq process on `host`."""
        return {
            **TUNING,
            "DOCQ_REDIS_MODE": "sentinel",
            "DOCQ_REDIS_URL": self.redis_url,
            "DOCQ_TRITON_GRPC_URLS": ",".join(self.triton_urls),
            "DOCQ_API_HOST": self.address(host),
            "DOCQ_API_PORT": str(API_PORT),
            "DOCQ_WORKER_METRICS_HOST": self.address(host),
        }

    def redis(self, host: str, replica_of: str | None) -> Service:
        """The host's redis-server: a replica of `replica_of`'s, or a master (None)."""
        addr, data = self.address(host), self.data(host) / "redis"
        argv = (
            stack.redis(REDIS_PORT, data, addr)
            if replica_of is None
            else stack.redis_replica(REDIS_PORT, data, REDIS_PORT, addr, self.address(replica_of))
        )
        return Service("redis", host, argv, "redis")

    def services(self, host: str) -> list[Service]:
        """The host's processes in the order they start (Redis as at first `up`)."""
        addr, env = self.address(host), self.env(host)
        if host in REDIS_HOSTS:
            of = None if host == FIRST_MASTER else FIRST_MASTER
            sentinel = stack.sentinel(SENTINEL_PORT, self.sentinel_conf(host), addr)
            return [self.redis(host, of), Service("sentinel", host, sentinel, "sentinel")]
        if host in TRITON_HOSTS:
            http, grpc, metrics = (str(p) for p in TRITON_PORTS)
            argv = stack.triton(
                *("--address", addr, "--http-port", http, "--grpc-port", grpc),
                *("--metrics-port", metrics),
                # two servers on one machine share /dev/shm: their stubs' regions apart
                f"--backend-config=python,shm-region-prefix-name={self.net.ns(host)}",
            )
            return [Service("triton", host, argv, "triton", env, stack.TRITON_NICE)]
        if host == "api":
            return [
                Service("api", host, stack.api(), "http", env, path="/healthz"),
                self._worker(host, "priority", "cpu-priority", "threads", 9102),
            ]
        if host in WORKER_HOSTS:
            return [
                self._worker(host, "bulk", "cpu", "threads", 9101),
                self._worker(host, "extract", "extract", "threads", 9104),
                self._worker(host, "webhooks", "webhooks", "prefork", 9103),
            ]
        return []

    def _worker(self, host: str, name: str, queues: str, pool: str, port: int) -> Service:
        argv = stack.worker(queues, f"{name}-{host}", concurrency=THREADS, pool=pool)
        env = {**self.env(host), "DOCQ_WORKER_METRICS_PORT": str(port)}
        if pool == "prefork":  # its children's metrics files: a directory per host
            env["PROMETHEUS_MULTIPROC_DIR"] = str(self.data(host) / "webhooks-metrics")
        argv = [*argv, "--without-gossip", "--without-mingle"]
        return Service(name, host, argv, "log", env, stack.WORKER_NICE)
