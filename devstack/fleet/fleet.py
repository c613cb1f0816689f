"""The fleet running: its hosts made, their processes started inside them (`ip netns exec`)
in the order that lets each find what it needs, a host lost whole and started again as a
restarted machine would be (its disk kept), and everything removed at the end.

The controller (this process) stays in the machine's own namespace and reaches every host
through the bridge's address; it only starts things and waits for them to be ready. What
docq does between hosts crosses the bridge alone.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import redis

from devstack import stack
from devstack.fleet import net
from devstack.fleet.hosts import (
    FIRST_MASTER,
    HOSTS,
    REDIS_HOSTS,
    REDIS_PORT,
    SENTINEL_PORT,
    TRITON_HOSTS,
    TRITON_PORTS,
    WORKER_HOSTS,
    Layout,
    Service,
)
from devstack.services import wait_for
from devstack.supervisor import Supervisor, triton_ready
from docq.store import connection
from docq.store.tenants import Tenants

log = logging.getLogger("fleet")

TRITON_START_S = 300  # two servers loading their models on 2 busy cores
START_S = 240  # a Celery worker took over 90 s to start here at a load of 24
SUPERVISE_S = 2.0  # how often the supervisor looks for docq processes that ended


class Fleet(Supervisor):
    """Every host of `layout`, started by `up()` and removed by `down()`; its docq processes
    supervised (devstack/supervisor.py)."""

    def __init__(self, layout: Layout) -> None:
        super().__init__()
        self.layout = layout

    @property
    def net(self) -> net.Network:
        return self.layout.net

    def log(self, host: str, name: str) -> Path:
        return self.layout.data(host) / f"{name}.log"

    # -- starting ---------------------------------------------------------------------

    def up(self) -> None:
        """Make the hosts and start every process, ready, on a fresh disk."""
        net.create(self.net, self.layout.addresses)
        for host in HOSTS:
            shutil.rmtree(self.layout.data(host), ignore_errors=True)
            (self.layout.data(host) / "redis").mkdir(parents=True)
        for host in REDIS_HOSTS:
            self.layout.sentinel_conf(host).write_text(self.layout.sentinel_config())
        self._start_redis()
        for host in TRITON_HOSTS:  # both load at once; wait for both after
            self.launch(self.layout.services(host)[0])
        for host in TRITON_HOSTS:
            self.wait(self.layout.services(host)[0], TRITON_START_S)
        # the API and the workers need only Redis: all at once, then wait for each
        started = [s for h in ("api", *WORKER_HOSTS) for s in self.layout.services(h)]
        for service in started:
            self.launch(service)
        for service in started:
            self.wait(service)
        self.supervise(
            SUPERVISE_S, lambda host, name: self.launch(self.service(host, name)), self.restartable
        )

    def _start_redis(self) -> None:
        """Master, replicas in sync, then the Sentinels once they can see all of it."""
        services = {h: self.layout.services(h) for h in REDIS_HOSTS}
        for host in REDIS_HOSTS:
            self.start(services[host][0])
        master = redis.Redis(self.layout.address(FIRST_MASTER), REDIS_PORT, socket_timeout=2)
        wait_for(
            lambda: master.info("replication")["connected_slaves"] == len(REDIS_HOSTS) - 1,
            30,
            "the replicas in sync",
        )
        for host in REDIS_HOSTS:
            self.start(services[host][1])
        wait_for(self.sentinels_agree, 60, "the Sentinels")

    def sentinels_agree(self) -> bool:
        """Every Sentinel knows the other two and both replicas."""
        for host in REDIS_HOSTS:
            s = redis.Redis(self.layout.address(host), SENTINEL_PORT, socket_timeout=2)
            seen = s.sentinel_master(stack.SENTINEL_MASTER)
            if (
                not isinstance(seen, dict)
                or seen["num-slaves"] < 2
                or seen["num-other-sentinels"] < 2
            ):
                return False
        return True

    def master(self) -> str | None:
        """The host the Sentinels that answer (a majority of the reachable) name master."""
        votes: dict[str, int] = {}
        by_address = {a: h for h, a in self.layout.addresses.items()}
        for host in REDIS_HOSTS:
            s = redis.Redis(self.layout.address(host), SENTINEL_PORT, socket_timeout=1)
            with contextlib.suppress(redis.RedisError):
                found = s.sentinel_get_master_addr_by_name(stack.SENTINEL_MASTER)
                if isinstance(found, tuple):
                    raw = found[0]
                    address = raw.decode() if isinstance(raw, bytes) else str(raw)
                    name = by_address.get(address, address)
                    votes[name] = votes.get(name, 0) + 1
        return max(votes, key=lambda h: votes[h]) if votes else None

    def launch(self, service: Service) -> subprocess.Popen[bytes]:
        """Start `service` inside its host; no wait."""
        key = (service.host, service.name)
        argv = ["ip", "netns", "exec", self.net.ns(service.host)]
        if service.nice:
            argv += ["nice", "-n", str(service.nice)]
        return self.spawn(key, [*argv, *service.argv], service.env, self.log(*key))

    def wait(self, service: Service, timeout: float = START_S) -> None:
        key = (service.host, service.name)
        wait_for(
            lambda: self.ready(service),
            timeout,
            f"{service.name} on {service.host} (log: {self.log(*key)})",
            self.procs[key],
        )

    def start(self, service: Service, timeout: float = START_S) -> None:
        self.launch(service)
        self.wait(service, timeout)

    def ready(self, service: Service) -> bool:
        addr = self.layout.address(service.host)
        if service.ready in ("redis", "sentinel"):
            port = REDIS_PORT if service.ready == "redis" else SENTINEL_PORT
            return bool(redis.Redis(addr, port, socket_timeout=1).ping())
        if service.ready == "triton":
            return triton_ready(f"{addr}:{TRITON_PORTS[1]}")
        if service.ready == "http":
            url = f"http://{addr}:{service.env['DOCQ_API_PORT']}{service.path}"
            return httpx.get(url, timeout=2).status_code == 200
        seen = self.log(service.host, service.name).read_bytes().count(b"ready.")
        return seen >= self.starts[(service.host, service.name)]

    def start_host(self, host: str) -> None:
        """Start every process of `host` as its machine boots: a Redis host asks the
        Sentinels who the master is and comes back as its replica (deploy/k8s-sentinel's
        pods do the same), its Sentinel on the configuration it last rewrote."""
        services = self.layout.services(host)
        if host in REDIS_HOSTS:
            master = self.master()
            replica_of = master if master not in (None, host) else None
            services = [self.layout.redis(host, replica_of), *services[1:]]
            for service in services:  # in order: the Sentinel after its Redis
                self.start(service, START_S)
        else:  # the API and the workers need only Redis: all at once, as `up` starts them
            for service in services:
                self.launch(service)
            for service in services:
                self.wait(service, TRITON_START_S if host in TRITON_HOSTS else START_S)

    # -- faults and the end -----------------------------------------------------------

    def lose(self, host: str) -> list[int]:
        """SIGKILL every process of `host` at once (the machine lost); their pids."""
        with self.lock:  # not started again by the supervisor: the host is down
            self.kept_down.update(key for key in self.procs if key[0] == host)
        killed = net.kill_all(self.net.ns(host))
        for (h, _), proc in self.procs.items():
            if h == host:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(30)
        log.info("host %s lost: %d processes killed", host, len(killed))
        return killed

    def down(self) -> None:
        """Kill everything and remove the hosts and the bridge."""
        self.stop_supervising()
        with self.lock:
            net.destroy(self.net)
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)

    def mend(self) -> list[tuple[str, str, int]]:
        """Heal every link and start again every process that ended (what a scenario left
        for the next one); those it started."""
        net.heal(self.net, HOSTS)
        with self.lock:
            ended = self.exited()
            for host, name, _ in ended:
                service = self.service(host, name)
                if service.ready == "redis":  # back as the replica of the master there is now
                    master = self.master()
                    service = self.layout.redis(host, master if master != host else None)
                self.start(service, TRITON_START_S)
        return ended

    def service(self, host: str, name: str) -> Service:
        return next(s for s in self.layout.services(host) if s.name == name)

    def restartable(self, host: str, name: str) -> bool:
        """What the supervisor starts again (every SUPERVISE_S) when it ends by itself: a
        docq process (the API, a Celery worker); a fleet without a supervisor would run one
        short until the next scenario. Not Redis, the Sentinels or a Triton (only ever lost
        with their host), nor a process of a host a nemesis took down (its heal boots it)."""
        return self.service(host, name).ready in ("log", "http")

    def api_key(self, tenant: str) -> str:
        """A new API key of `tenant` (made through the Sentinels, from the controller)."""
        client = connection.connect(self.layout.redis_url, socket_timeout=5)
        key = ""
        deadline = time.monotonic() + 30
        while not key:
            try:
                key = Tenants(client).create_key(tenant)[1]
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        return key
