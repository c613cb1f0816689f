"""Send packed batches to one or several Triton servers over gRPC, many requests in flight.

Several servers share the load (DOCQ_TRITON_GRPC_URLS); each batch goes to the server
with the fewest requests in flight from this process, and a server that stops answering
loses no batch:

    submit(batch) ──> up endpoints, fewest in flight ──> async_infer ──> answered
                                ^                                            │
        health thread: every    │           unreachable or model missing: the batch
        interval, is_server_    │           goes to another endpoint (never failed while
        ready() on each; a      │           one is up); unreachable marks its endpoint
        fresh channel for a     │           down until the health check passes again
        down one ───────────────┘

A model that one server does not serve (explicit model control, a server just restarted)
is routed around for one health interval; the catalogue loads it there on the next shard
(docq/catalog.py). Only when no endpoint is left does a batch fail, with the retryable
InferenceUnavailable: Celery retries the shard after its backoff.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from docq.catalog import triton_client
from docq.errors import DocqError, InferenceUnavailable, ModelError
from docq.models import ModelSpec
from docq.text.packing import Batch
from workers import metrics

log = logging.getLogger(__name__)

Logits = npt.NDArray[np.float32]
# Called once per request with the batch's logits, or with the error that replaced them.
Done = Callable[[Logits | None, DocqError | None], None]


class Client(Protocol):
    """The part of tritonclient's gRPC client that inference uses (a fake in unit tests)."""

    def async_infer(self, model_name: str, inputs: Any, callback: Any, **kw: Any) -> Any: ...
    def is_server_ready(self, headers: Any = None, client_timeout: Any = None) -> bool: ...
    def close(self) -> None: ...


ClientFactory = Callable[[str], Client]

# Why a request failed, as the metrics and the failover see it.
UNAVAILABLE = "unavailable"  # the server cannot be reached: leave it until it is healthy
MODEL_MISSING = "model_missing"  # it does not serve this model now: route around it
TIMEOUT = "timeout"  # no answer in time: try another server, keep this one
INVALID = "invalid"  # the request itself is wrong: no server will take it
OTHER = "other"


def classify(exc: InferenceServerException) -> str:
    """Sort a gRPC failure into one of the reasons above."""
    status, text = str(exc.status() or ""), str(exc.message() or exc).lower()
    if "unknown model" in text or "no available versions" in text or "is not ready" in text:
        return MODEL_MISSING
    if "INVALID_ARGUMENT" in status:
        return INVALID
    if "DEADLINE_EXCEEDED" in status or "deadline exceeded" in text:
        return TIMEOUT
    if "UNAVAILABLE" in status or "failed to connect" in text or "socket closed" in text:
        return UNAVAILABLE
    return OTHER


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


class TritonInference:
    """gRPC clients to every Triton endpoint; create one per process, after fork."""

    def __init__(
        self,
        urls: str | Sequence[str],
        *,
        max_in_flight: int,
        timeout_s: float,
        health_interval_s: float = 2.0,
        probe_timeout_s: float = 5.0,
        client_factory: ClientFactory = triton_client,
    ) -> None:
        urls = [urls] if isinstance(urls, str) else list(urls)
        if not urls:
            raise ValueError("at least one Triton endpoint is needed")
        self._factory = client_factory
        self.endpoints = [Endpoint(u, client_factory(u)) for u in urls]
        self.max_in_flight = max_in_flight
        self.timeout_s = timeout_s
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

    # --- choosing an endpoint ---------------------------------------------------------

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

    def _release(self, endpoint: Endpoint) -> None:
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

    # --- sending ----------------------------------------------------------------------

    def submit(self, spec: ModelSpec, batch: Batch, priority: int, done: Done) -> None:
        """Send one batch without waiting; `done` runs once, on gRPC's callback thread (or
        here, if no endpoint can take it).

        `priority` is Triton's request priority (1 is the highest; 0 means the model's
        default level): small jobs pass 1 so that their requests overtake a bulk job's in
        Triton's queue, when the model's dynamic batcher has priority levels.
        """
        self._send(spec, batch, priority, done, frozenset(), None)

    def _send(
        self,
        spec: ModelSpec,
        batch: Batch,
        priority: int,
        done: Done,
        tried: frozenset[str],
        last: DocqError | None,
    ) -> None:
        endpoint = self.pick(spec.name, tried)
        if endpoint is None:
            done(None, last or InferenceUnavailable(f"no Triton endpoint serves {spec.name!r}"))
            return
        rows = batch.input_ids.shape[0]
        started = time.perf_counter()

        def answered(result: grpcclient.InferResult | None, error: object) -> None:
            # Whatever happens, `done` must run exactly once: its caller is waiting for it.
            self._release(endpoint)
            elapsed = time.perf_counter() - started
            if error is not None or result is None:
                exc = error if isinstance(error, InferenceServerException) else None
                self._failed(spec, batch, priority, done, tried, endpoint, exc, error)
                return
            metrics.TRITON_SECONDS.labels(endpoint.url, spec.name).observe(elapsed)
            try:
                logits = result.as_numpy(spec.output_name)
            except Exception as exc:  # a broken answer must fail the batch, not hang it
                metrics.TRITON_ERRORS.labels(endpoint.url, spec.name, OTHER).inc()
                done(None, InferenceUnavailable(f"unreadable answer from {spec.name!r}: {exc!r}"))
                return
            if logits is None or logits.shape[0] != rows:
                metrics.TRITON_ERRORS.labels(endpoint.url, spec.name, INVALID).inc()
                done(None, ModelError(f"model {spec.name!r} returned no or misshapen logits"))
                return
            done(logits, None)

        ids = grpcclient.InferInput(spec.input_names[0], list(batch.input_ids.shape), "INT64")
        ids.set_data_from_numpy(batch.input_ids)
        mask = grpcclient.InferInput(spec.input_names[1], list(batch.attention_mask.shape), "INT64")
        mask.set_data_from_numpy(batch.attention_mask)
        try:
            endpoint.client.async_infer(
                spec.name,
                [ids, mask],
                callback=answered,  # called as callback(result=..., error=...)
                outputs=[grpcclient.InferRequestedOutput(spec.output_name)],
                client_timeout=self.timeout_s,
                priority=priority,
            )
        except InferenceServerException as exc:
            answered(None, exc)
        except Exception as exc:  # e.g. a channel closed by the health thread meanwhile
            answered(None, InferenceServerException(f"failed to connect: {exc!r}", "UNAVAILABLE"))

    def _failed(
        self,
        spec: ModelSpec,
        batch: Batch,
        priority: int,
        done: Done,
        tried: frozenset[str],
        endpoint: Endpoint,
        exc: InferenceServerException | None,
        error: object,
    ) -> None:
        """A request failed on `endpoint`: send it elsewhere, or report the error."""
        exc = exc or InferenceServerException(str(error))
        reason = classify(exc)
        metrics.TRITON_ERRORS.labels(endpoint.url, spec.name, reason).inc()
        if reason == INVALID:
            done(None, ModelError(f"model {spec.name!r} rejected the request: {exc.message()}"))
            return
        if reason == UNAVAILABLE and len(self.endpoints) > 1:
            self.mark_down(endpoint, exc.message() or reason)
        elif reason == MODEL_MISSING:
            with self._lock:
                endpoint.missing[spec.name] = time.monotonic() + self.health_interval_s
        failure = InferenceUnavailable(
            f"inference on {spec.name!r} failed at {endpoint.url}: {exc.message()}",
            str(exc.status()),
        )
        if len(self.endpoints) > 1:
            log.info(
                "batch for %s failed at %s (%s); trying another", spec.name, endpoint.url, reason
            )
        self._send(spec, batch, priority, done, tried | {endpoint.url}, failure)

    # --- health -------------------------------------------------------------------------

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

    # --- the synchronous form (bench, Triton alone) -------------------------------------

    def infer(
        self, spec: ModelSpec, batches: Sequence[Batch], *, priority: int = 0
    ) -> list[Logits]:
        """Logits for each batch, in order; at most `max_in_flight` requests outstanding."""
        results: list[Logits | None] = [None] * len(batches)
        errors: list[DocqError] = []
        slots = threading.Semaphore(self.max_in_flight)
        finished = threading.Semaphore(0)

        def answered(i: int) -> Done:
            def done(logits: Logits | None, error: DocqError | None) -> None:
                if error is not None:
                    errors.append(error)
                results[i] = logits
                slots.release()
                finished.release()

            return done

        sent = 0
        for i, batch in enumerate(batches):
            slots.acquire()
            if errors:
                slots.release()
                break
            self.submit(spec, batch, priority, answered(i))
            sent += 1
        for _ in range(sent):
            finished.acquire()
        if errors:
            raise errors[0]
        return [r for r in results if r is not None]

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
