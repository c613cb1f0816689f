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
import os
import shutil
import subprocess
import threading
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
from devstack.stack import REPO
from docq.store import connection
from docq.store.tenants import Tenants

log = logging.getLogger("fleet")

TRITON_START_S = 300  # two servers loading their models on 2 busy cores
START_S = 240  # a Celery worker took over 90 s to start here at a load of 24
SUPERVISE_S = 2.0  # how often the supervisor looks for docq processes that ended


class Fleet:
    """Every host of `layout`, started by `up()` and removed by `down()`."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.procs: dict[tuple[str, str], subprocess.Popen[bytes]] = {}
        self.starts: dict[tuple[str, str], int] = {}
        self.lost: set[str] = set()  # hosts a nemesis took down: their heal boots them
        self.restarts: list[dict[str, object]] = []  # what the supervisor started again
        self.lock = threading.RLock()
        self.stopping = threading.Event()

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
        threading.Thread(target=self.supervise, name="fleet-supervisor", daemon=True).start()

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
        with self.lock, self.log(*key).open("ab") as out:
            proc = subprocess.Popen(
                [*argv, *service.argv],
                cwd=REPO,
                env={**os.environ, **service.env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.procs[key] = proc
            self.starts[key] = self.starts.get(key, 0) + 1
        return proc

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
            import tritonclient.grpc as grpcclient

            client = grpcclient.InferenceServerClient(f"{addr}:{TRITON_PORTS[1]}")
            try:
                return bool(client.is_server_ready()) and bool(client.is_model_ready("doc-type"))
            finally:
                client.close()
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
        self.lost.discard(host)

    # -- faults and the end -----------------------------------------------------------

    def lose(self, host: str) -> list[int]:
        """SIGKILL every process of `host` at once (the machine lost); their pids."""
        with self.lock:  # not started again by the supervisor: the host is down
            self.lost.add(host)
        killed = net.kill_all(self.net.ns(host))
        for (h, _), proc in self.procs.items():
            if h == host:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(30)
        log.info("host %s lost: %d processes killed", host, len(killed))
        return killed

    def down(self) -> None:
        """Kill everything and remove the hosts and the bridge."""
        self.stopping.set()
        with self.lock:
            net.destroy(self.net)
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)

    def exited(self) -> list[tuple[str, str, int]]:
        """Processes that ended although no one killed them: (host, name, code)."""
        with self.lock:
            procs = list(self.procs.items())
        return [(*key, rc) for key, proc in procs if (rc := proc.poll()) is not None]

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
            self.lost.clear()
        return ended

    def service(self, host: str, name: str) -> Service:
        return next(s for s in self.layout.services(host) if s.name == name)

    def supervise(self) -> None:
        """Start again, every SUPERVISE_S, a docq process (the API, a Celery worker) that
        ended by itself, as Kubernetes restarts a pod's container (restartPolicy: Always)
        and compose's `restart:` does: a Celery worker exits (code 1) on an error it does
        not recover from, and a fleet without a supervisor would run one short until the
        next scenario. Not those of a host a nemesis took down (its heal boots it), nor
        Redis, the Sentinels or a Triton (only ever lost with their host)."""
        while not self.stopping.wait(SUPERVISE_S):
            with self.lock:
                for host, name, code in self.exited():
                    service = self.service(host, name)
                    if host in self.lost or service.ready not in ("log", "http"):
                        continue
                    log.warning("%s on %s ended (%d): starting it again", name, host, code)
                    self.restarts.append(
                        {"host": host, "name": name, "code": code, "at": time.time()}
                    )
                    self.launch(service)

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
