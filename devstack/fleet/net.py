"""The fleet's network: one bridge, a network namespace per host joined to it by a veth
pair, an address per host; and the cuts the nemeses make in it with iproute2 alone.

What this machine's kernel offers decides how (checked 2026-12-05): no iptables or nft, and
`tc` has neither classifiers (u32, flower, matchall), nor actions (drop), nor netem; the
bridge has no VLAN filtering; htb works. So a cut is made where a host turns an address
into a link-layer address: on each side, a permanent neighbour entry for every address
across the cut names a MAC address nobody has. Frames leave the host and are lost on the
wire, for new connections and established ones alike: TCP sees silence, as across a real
partition, never a refused connection. A slow link is netem where the kernel has it
(delay, jitter, loss), else an htb rate limit: a thin link, whose queue makes the delay.
Healing deletes those entries (the next packet asks ARP again) and the root qdisc.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


def available() -> str | None:
    """Why the fleet cannot run here (None when it can): it needs root and iproute2."""
    if os.geteuid() != 0:
        return "the fleet needs root (network namespaces, veth pairs, tc)"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "the fleet needs iproute2's ip and tc"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"`ip netns` does not work here: {probe.stderr.decode().strip()}"
    return None


def probe(net: Network) -> str | None:
    """Why `net` cannot be made here (None when it can): a bridge, a namespace and a veth
    pair made and removed again (a container may allow `ip netns` and refuse veths)."""
    if reason := available():
        return reason
    try:
        create(net, {"probe": net.address(254)})
    except subprocess.CalledProcessError as e:
        return f"`{' '.join(e.cmd)}` failed: {(e.stderr or '').strip()}"
    finally:
        destroy(net)
    return None


@dataclass(frozen=True)
class Network:
    """Where a fleet lives: `prefix` names its namespaces, bridge and veths (one fleet per
    prefix on a machine); `subnet` is its /24, the bridge taking .1 (the controller's
    address: the machine's own namespace reaches every host through it)."""

    prefix: str = "dqf"
    subnet: str = "10.77.0"

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    @property
    def gateway(self) -> str:
        return f"{self.subnet}.1"

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def address(self, last: int) -> str:
        return f"{self.subnet}.{last}"

    def namespaces(self) -> list[str]:
        """This fleet's namespaces that exist now (a crashed run's included)."""
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
        names = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
        return [n for n in names if n.startswith(f"{self.prefix}-")]


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def in_ns(ns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a short command (ip, tc) inside namespace `ns`."""
    return ip("netns", "exec", ns, *argv, check=check)


def pids(ns: str) -> list[int]:
    """Every process running in namespace `ns`."""
    out = ip("netns", "pids", ns, check=False).stdout
    return [int(p) for p in out.split()]


def kill_all(ns: str) -> list[int]:
    """SIGKILL every process in namespace `ns` at once (a host lost whole); their pids."""
    found = pids(ns)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


def create(net: Network, hosts: Mapping[str, str]) -> None:
    """The bridge and one namespace per host (name -> address), after removing whatever a
    crashed run of the same prefix left."""
    destroy(net)
    ip("link", "add", net.bridge, "type", "bridge")
    ip("addr", "add", f"{net.gateway}/24", "dev", net.bridge)
    ip("link", "set", net.bridge, "up")
    for i, (host, address) in enumerate(hosts.items()):
        ns, veth = net.ns(host), f"{net.prefix}v{i}"
        ip("netns", "add", ns)
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("link", "set", veth, "master", net.bridge, "up")
        ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")


def destroy(net: Network) -> None:
    """Kill every process in the fleet's namespaces, delete them and the bridge (their
    veths go with them). Safe to call when nothing is there."""
    for ns in net.namespaces():
        kill_all(ns)
        ip("netns", "del", ns, check=False)
    # a namespace goes once its last process has: delete its veth now, not then
    for line in ip("-o", "link", "show").stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(f"{net.prefix}v") or name == net.bridge:
            ip("link", "del", name, check=False)


# A locally administered unicast MAC no interface has: frames sent to it are lost.
NOWHERE = "02:00:00:00:de:ad"


def heal(net: Network, hosts: Iterable[str]) -> None:
    """Remove every cut and slow link of these hosts."""
    for host in hosts:
        ns = net.ns(host)
        for line in ip("-n", ns, "neigh", "show", "nud", "permanent").stdout.splitlines():
            ip("-n", ns, "neigh", "del", line.split()[0], "dev", "eth0", check=False)
        ip("-n", ns, "neigh", "flush", "dev", "eth0", check=False)
        in_ns(ns, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)


def drop(net: Network, host: str, addresses: Iterable[str]) -> None:
    """Lose every frame `host` sends to `addresses` (one side of a cut)."""
    for address in addresses:
        entry = (address, "lladdr", NOWHERE, "dev", "eth0", "nud", "permanent")
        ip("-n", net.ns(host), "neigh", "replace", *entry)


def cut(net: Network, side_a: Mapping[str, str], side_b: Mapping[str, str]) -> None:
    """A partition: no packet between a host of `side_a` and one of `side_b` (name ->
    address each), either way; each side still reaches itself."""
    for host in side_a:
        drop(net, host, side_b.values())
    for host in side_b:
        drop(net, host, side_a.values())


def slow(net: Network, host: str, delay_ms: int, jitter_ms: int, loss_pct: float) -> str:
    """Every packet `host` sends delayed `delay_ms` +/- `jitter_ms` with `loss_pct` % lost
    (netem); where the kernel has no netem, its link thinned to THIN_RATE instead. Says
    which it did."""
    ns = net.ns(host)
    netem = in_ns(
        ns,
        *("tc", "qdisc", "replace", "dev", "eth0", "root", "netem"),
        *("delay", f"{delay_ms}ms", f"{jitter_ms}ms", "loss", f"{loss_pct}%"),
        check=False,
    )
    if netem.returncode == 0:
        return f"netem delay {delay_ms}ms {jitter_ms}ms loss {loss_pct}%"
    in_ns(
        ns, "tc", "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "1"
    )
    in_ns(
        ns,
        "tc",
        "class",
        "replace",
        "dev",
        "eth0",
        "parent",
        "1:",
        "classid",
        "1:1",
        "htb",
        "rate",
        THIN_RATE,
        "ceil",
        THIN_RATE,
    )
    return f"htb rate {THIN_RATE} (no netem in this kernel)"


# A link this thin queues a shard's results for seconds (a slow link, where netem is not).
THIN_RATE = "256kbit"
