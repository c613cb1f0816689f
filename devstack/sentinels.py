"""Redis behind Sentinels for the tests and the bench: stack.py's topology (a master, its
replica, three Sentinels) on free ports, the processes of DOCQ_REDIS_MODE=sentinel."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from devstack import stack
from devstack.services import free_port, stop, wait_for


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

        # Sentinels learn each other from hellos every 2 s and replicas from INFO every
        # 10 s: a loaded machine (CI's two cores running two test processes) has taken
        # past 30 s.
        wait_for(ready, 60, "the Sentinel topology")
        yield group
    finally:
        for proc in [*sentinels, *group.servers.values()]:
            stop(proc)
