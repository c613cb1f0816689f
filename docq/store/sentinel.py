"""Redis behind Sentinels: the `sentinel://` URL form, read the way kombu reads it.

    sentinel://[:password@]host:port;sentinel://host:port;sentinel://host:port/db

kombu's Redis transport takes this URL as it is (with the master's name in its transport
options, docq/queue.py); redis-py has no URL form for Sentinel, so this module turns the
same string into `redis.sentinel.Sentinel(...).master_for(name)`. The client it builds asks
the Sentinels for the master's address at every new connection, and drops its idle
connections when that address changes: after a failover the next command reaches the new
master, with no restart. While the Sentinels know no healthy master (the seconds between
the old one's death and the promotion), a connection fails like any Redis outage.

As in kombu, the first URL carries the password and the database; the password is sent to
the master and to the Sentinels alike (requirepass on both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError, Sentinel

SCHEME = "sentinel"
DEFAULT_PORT = 26379  # kombu's and Redis' default Sentinel port
SENTINEL_TIMEOUT_S = 1.0  # how long one Sentinel may take to answer where the master is


@dataclass(frozen=True, slots=True)
class SentinelUrl:
    """What a sentinel:// URL names: the Sentinels, and how to talk to the master."""

    sentinels: tuple[tuple[str, int], ...]
    password: str | None
    username: str | None
    db: int


def is_sentinel(url: str) -> bool:
    """Whether `url` names Sentinels rather than one Redis."""
    return url.startswith(f"{SCHEME}://")


def parse(url: str) -> SentinelUrl:
    """The parts of a sentinel:// URL (ValueError when it is not one)."""
    parts = [urlsplit(u.strip()) for u in url.split(";") if u.strip()]
    if not parts or any(p.scheme != SCHEME for p in parts):
        raise ValueError(f"not a {SCHEME}:// URL: every ';'-separated part needs the scheme")
    sentinels = tuple((p.hostname or "127.0.0.1", p.port or DEFAULT_PORT) for p in parts)
    first = parts[0]
    # kombu takes the database from the first URL; the last one's path is accepted too,
    # since that is where a reader puts it in the documented form.
    path = next((p.path.strip("/") for p in (first, parts[-1]) if p.path.strip("/")), "0")
    return SentinelUrl(
        sentinels=sentinels,
        password=unquote(first.password) if first.password else None,
        username=unquote(first.username) if first.username else None,
        db=int(path),
    )


class QuorumSentinel(Sentinel):
    """A Sentinel client that takes the master most of the Sentinels name, not the first
    answer: a Sentinel that was cut off from the others still names the old master for a
    moment after the partition heals, while the old master still acts as one. With
    redis-py's first answer, an upload's read-back of the job it had just written to the
    new master went to the old one and was answered 404 while its job ran (issue 41's
    fleet, the master's host partitioned, at the heal). Sentinels are asked in turn, those
    that answered first; the answer stops at a majority of them, so a Sentinel out of reach
    costs its timeout once, not at every connection. No majority: MasterNotFoundError,
    which the store reports unavailable (503), as for a master no Sentinel names."""

    def discover_master(self, service_name: str) -> tuple[str, int]:
        votes: dict[tuple[str, int], int] = {}
        errors: list[str] = []
        answered: list[Any] = []
        for sentinel in list(self.sentinels):
            try:
                masters = sentinel.sentinel_masters()
            except (redis.ConnectionError, redis.ResponseError, redis.TimeoutError) as exc:
                errors.append(f"{sentinel} - {exc!r}")
                continue
            answered.append(sentinel)
            state = masters.get(service_name) if isinstance(masters, dict) else None
            if not state or not self.check_master_state(state, service_name):
                continue
            address = (self._force_master_ip or state["ip"], int(state["port"]))
            votes[address] = votes.get(address, 0) + 1
            if 2 * votes[address] > len(self.sentinels):
                self.sentinels = answered + [s for s in self.sentinels if s not in answered]
                return address
        self.sentinels = answered + [s for s in self.sentinels if s not in answered]
        raise MasterNotFoundError(
            f"no master named {service_name!r} by a majority of the Sentinels "
            f"({votes or 'none named one'}; {', '.join(errors) or 'all answered'})"
        )


def master_client(
    url: str, master: str, redis_class: type[redis.Redis], **connection: Any
) -> redis.Redis:
    """A `redis_class` client of the master the Sentinels of `url` name `master`.

    `connection`: redis-py connection options (socket_timeout...), for the master's
    connections and the Sentinels' alike (their timeouts and `retry`), so that a Sentinel
    that stops answering is given up as soon as a master would be."""
    parts = parse(url)
    auth = {"password": parts.password, "username": parts.username}
    timeouts = {k: v for k, v in connection.items() if k.startswith("socket_") or k == "retry"}
    # A Sentinel answers at once or is out of reach: each is asked in turn until a majority
    # agrees (QuorumSentinel), so one out of reach must cost a second, not a command's
    # timeout twice over.
    timeouts.update(
        socket_timeout=min(SENTINEL_TIMEOUT_S, connection.get("socket_timeout") or 1e9),
        socket_connect_timeout=SENTINEL_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
    )
    sentinels = QuorumSentinel(
        list(parts.sentinels),
        sentinel_kwargs={**auth, **timeouts},
        db=parts.db,
        password=parts.password,  # by name: redis 8.2's typing reads a dict of them as
        username=parts.username,  # its new positional parameters
        **connection,
    )
    return sentinels.master_for(master, redis_class=redis_class)
