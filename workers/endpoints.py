"""Which Triton endpoint takes the next batch, and which endpoints are up.

A worker process holds one `Endpoints` for every server of DOCQ_TRITON_GRPC_URLS. The
next batch goes to the up endpoint with the fewest requests in flight from this process
(ties in turn). An endpoint is left when a request cannot reach it (workers/inference.py
says so) or after two failed health checks in a row, and taken back as soon as a check
passes; a model one endpoint does not serve is routed around there for one interval:

    pick(model) ──> up, serving model, fewest in flight ──> the batch's endpoint
                        ^
    health thread: every interval, is_server_ready() on each endpoint; a fresh channel
    for a down one with nothing in flight on the old (gRPC backs off reconnecting a
    channel whose server died, for up to two minutes)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from workers import metrics

log = logging.getLogger(__name__)


class Client(Protocol):
    """The part of tritonclient's gRPC client that inference uses (a fake in unit tests)."""

    def async_infer(self, model_name: str, inputs: Any, callback: Any, **kw: Any) -> Any: ...
    def is_server_ready(self, headers: Any = None, client_timeout: Any = None) -> bool: ...
    def close(self) -> None: ...


ClientFactory = Callable[[str], Client]


@dataclass
class Endpoint:
    """One Triton server as this process sees it."""

    url: str
    client: Client
    up: bool = True
    in_flight: int = 0
    failed_checks: int = 0  # health checks failed in a row
    # model -> monotonic time until which it is routed around on this endpoint
    missing: dict[str, float] = field(default_factory=dict)

    def serves(self, model: str, now: float) -> bool:
        return self.up and self.missing.get(model, 0.0) <= now


class Endpoints:
    """This process's Triton endpoints, their requests in flight and their health."""

    def __init__(
        self,
        urls: Sequence[str],
        client_factory: ClientFactory,
        *,
        health_interval_s: float = 2.0,
        probe_timeout_s: float = 5.0,
    ) -> None:
        if not urls:
            raise ValueError("at least one Triton endpoint is needed")
        self._factory = client_factory
        self.endpoints = [Endpoint(u, client_factory(u)) for u in urls]
        self.health_interval_s = health_interval_s
        self.probe_timeout_s = probe_timeout_s
        self._lock = threading.Lock()
        self._next = 0  # round-robin among endpoints with equally few requests in flight
        self._closed = threading.Event()
        self._health: threading.Thread | None = None
        for e in self.endpoints:
            metrics.TRITON_UP.labels(e.url).set(1)
        if len(self.endpoints) > 1:
            self._health = threading.Thread(
                target=self._watch, name="docq-triton-health", daemon=True
            )
            self._health.start()

    def __len__(self) -> int:
        return len(self.endpoints)

    def pick(self, model: str, exclude: frozenset[str] = frozenset()) -> Endpoint | None:
        """The up endpoint serving `model` with the fewest requests in flight (ties in
        turn), counted as taken; None when no endpoint is left."""
        now = time.monotonic()
        with self._lock:
            n = len(self.endpoints)
            order = [self.endpoints[(self._next + i) % n] for i in range(n)]
            candidates = [e for e in order if e.url not in exclude and e.serves(model, now)]
            if not candidates and len(self.endpoints) == 1 and not exclude:
                # One server: nothing to route to, so try it anyway (it may be back).
                candidates = order
            if not candidates:
                return None
            best = min(candidates, key=lambda e: e.in_flight)
            best.in_flight += 1
            self._next = (self.endpoints.index(best) + 1) % n
            return best

    def release(self, endpoint: Endpoint) -> None:
        with self._lock:
            endpoint.in_flight -= 1

    def mark_down(self, endpoint: Endpoint, why: str) -> None:
        """Leave an endpoint until its health check passes."""
        with self._lock:
            was_up, endpoint.up = endpoint.up, False
        if was_up:
            metrics.TRITON_UP.labels(endpoint.url).set(0)
            log.warning("triton %s is down (%s); its batches go elsewhere", endpoint.url, why)

    def mark_up(self, endpoint: Endpoint) -> None:
        with self._lock:
            was_up, endpoint.up = endpoint.up, True
            endpoint.missing.clear()
        if not was_up:
            metrics.TRITON_UP.labels(endpoint.url).set(1)
            log.info("triton %s is ready again; it takes batches", endpoint.url)

    def route_around(self, endpoint: Endpoint, model: str) -> None:
        """Send no batch of `model` to `endpoint` for one health interval."""
        with self._lock:
            endpoint.missing[model] = time.monotonic() + self.health_interval_s

    def _watch(self) -> None:
        while not self._closed.wait(self.health_interval_s):
            self.check_health()

    def check_health(self) -> None:
        """Ask every endpoint whether it is ready; take back those that are, leave the rest.

        An up endpoint is left after two failed checks in a row (one slow answer on a busy
        host is not an outage; a request that cannot reach it leaves it at once). A down
        endpoint gets a fresh channel once nothing is in flight on the old one: gRPC backs
        off reconnecting a channel whose server died (up to two minutes), which would delay
        taking it back, and closing a channel fails the requests still on it.
        """
        for e in list(self.endpoints):
            if not e.up and e.in_flight == 0:
                old, e.client = e.client, self._factory(e.url)
                _close_quietly(old)
            try:
                ready = bool(e.client.is_server_ready(client_timeout=self.probe_timeout_s))
                why = "not ready"
            except Exception as exc:  # unreachable, refused, timed out: all mean "not now"
                ready, why = False, str(exc) or type(exc).__name__
            if ready:
                e.failed_checks = 0
                self.mark_up(e)
            else:
                e.failed_checks += 1
                if e.failed_checks >= 2:
                    self.mark_down(e, f"health check: {why}")

    def close(self) -> None:
        self._closed.set()
        if self._health is not None:
            self._health.join(timeout=5)
        for e in self.endpoints:
            _close_quietly(e.client)


def _close_quietly(client: Client) -> None:
    try:
        client.close()
    except Exception as exc:  # closing a channel to a dead server must not stop the worker
        log.debug("closing a Triton client failed: %r", exc)
