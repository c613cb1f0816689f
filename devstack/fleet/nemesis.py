"""The nemeses (Jepsen's word): the faults a fleet meets, each applied and healed.

    Isolate(host)      the host partitioned from every other
    Halves()           the Redis master with the API (and the client) on one side, the
                       Sentinel majority, the workers and the Tritons on the other
    SlowLink(host)     every packet the host sends 200 ms +/- 50 ms late, some lost
                       (netem; an htb-thinned link where the kernel has no netem)
    LoseHost(host)     every process of the host SIGKILLed at once; healing starts the
                       host again as a rebooted machine would (its disk kept)
    Together(parts)    several of these at once (a worker host and a Triton host lost)

Which host is the Redis master is read from the Sentinels when a nemesis is applied, not
assumed: after a failover it is another one. Each `apply` returns what it did, in words,
for the run's record.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from devstack.fleet import net
from devstack.fleet.fleet import Fleet
from devstack.fleet.hosts import FIRST_MASTER, HOSTS

CLIENT = "client"


class Nemesis:
    """A fault: `apply` it, later `heal` it (both idempotent enough to call once each)."""

    name = "nemesis"

    def apply(self, fleet: Fleet) -> str:
        raise NotImplementedError

    def heal(self, fleet: Fleet) -> None:
        raise NotImplementedError


def master_host(fleet: Fleet) -> str:
    """The Redis master's host now (the first one, when no Sentinel answers)."""
    return fleet.master() or FIRST_MASTER


@dataclass
class Isolate(Nemesis):
    """`host` cut from every other host, either way ("master": the Redis master's host)."""

    host: str
    name: str = "isolate"
    cut: str = field(default="", init=False)

    def apply(self, fleet: Fleet) -> str:
        self.cut = master_host(fleet) if self.host == "master" else self.host
        addresses = fleet.layout.addresses
        alone = {self.cut: addresses[self.cut]}
        others = {h: a for h, a in addresses.items() if h != self.cut}
        net.cut(fleet.net, alone, others)
        return f"{self.cut} partitioned from every other host"

    def heal(self, fleet: Fleet) -> None:
        net.heal(fleet.net, HOSTS)


@dataclass
class Halves(Nemesis):
    """The master, the API and the client apart from the Sentinel majority and the rest."""

    name: str = "halves"
    side: tuple[str, ...] = field(default=(), init=False)

    def apply(self, fleet: Fleet) -> str:
        self.side = ("api", CLIENT, master_host(fleet))
        addresses = fleet.layout.addresses
        a = {h: addresses[h] for h in self.side}
        b = {h: x for h, x in addresses.items() if h not in self.side}
        net.cut(fleet.net, a, b)
        return f"{', '.join(a)} | {', '.join(b)}"

    def heal(self, fleet: Fleet) -> None:
        net.heal(fleet.net, HOSTS)


@dataclass
class SlowLink(Nemesis):
    """Every packet `host` sends late (200 ms +/- 50 ms, 5% lost) or through a thin link."""

    host: str
    name: str = "slow"
    delay_ms: int = 200
    jitter_ms: int = 50
    loss_pct: float = 5.0

    def apply(self, fleet: Fleet) -> str:
        how = net.slow(fleet.net, self.host, self.delay_ms, self.jitter_ms, self.loss_pct)
        return f"{self.host}: {how}"

    def heal(self, fleet: Fleet) -> None:
        net.heal(fleet.net, [self.host])


@dataclass
class LoseHost(Nemesis):
    """Every process of `host` SIGKILLed at once; `heal` starts the host again."""

    host: str
    name: str = "lose"

    def apply(self, fleet: Fleet) -> str:
        killed = fleet.lose(self.host)
        return f"{self.host} lost: {len(killed)} processes SIGKILLed"

    def heal(self, fleet: Fleet) -> None:
        fleet.start_host(self.host)


@dataclass
class Together(Nemesis):
    """Several nemeses applied at once, healed at once (e.g. two hosts lost together)."""

    parts: tuple[Nemesis, ...]
    name: str = "together"

    def apply(self, fleet: Fleet) -> str:
        return "; ".join(part.apply(fleet) for part in self.parts)

    def heal(self, fleet: Fleet) -> None:
        """Every part healed at once (two lost hosts boot side by side, as they would)."""
        with ThreadPoolExecutor(len(self.parts)) as pool:
            for done in [pool.submit(part.heal, fleet) for part in self.parts]:
                done.result()


def catalogue() -> list[Nemesis]:
    """One of each fault on each host it makes sense on (what a random run draws from)."""
    out: list[Nemesis] = [Isolate("master"), Halves()]
    out += [Isolate(h) for h in ("api", "worker-1", "worker-2", "triton-1", "triton-2")]
    out += [SlowLink(h) for h in ("worker-1", "triton-1", "redis-2")]
    out += [LoseHost(h) for h in ("worker-1", "worker-2", "triton-1", "triton-2", "redis-1")]
    out += [Together((LoseHost("worker-2"), LoseHost("triton-2")))]
    return out
