"""Send packed batches to one or several Triton servers over gRPC, many requests in flight.

Several servers share the load (DOCQ_TRITON_GRPC_URLS): each batch goes to the endpoint
that workers/endpoints.py picks (the up one with the fewest requests in flight), and a
server that stops answering loses no batch:

    submit(batch) ──> pick ──> async_infer ──> answered: logits, or an error
                       ^                                   │ unreachable, model missing,
                       └───── the same batch, elsewhere ───┘ timed out (invalid: failed)

An unreachable endpoint is left until its health check passes again; a model one server
does not serve (explicit model control, a server just restarted) is routed around there
for one health interval, and the catalogue loads it there on the next shard
(docq/catalog.py). When no endpoint is left because every one is unreachable or without
the model (a server restarting, its models loading), the batch waits for one to come back,
sent again every `resend_interval_s`, for up to `hold_s` (DOCQ_TRITON_HOLD_S): a restart of
a few seconds then costs those seconds, not a failed shard that Celery retries after its
jittered backoff (up to twice the outage) and that tokenizes its documents again. Only then
does the batch fail, with the retryable InferenceUnavailable: Celery retries the shard.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from docq.catalog import triton_client
from docq.errors import DocqError, InferenceUnavailable, ModelError
from docq.models import ModelSpec
from docq.text.packing import Batch
from workers import metrics
from workers.endpoints import ClientFactory, Endpoint, Endpoints

log = logging.getLogger(__name__)

Logits = npt.NDArray[np.float32]
# Called once per request with the batch's logits, or with the error that replaced them.
Done = Callable[[Logits | None, DocqError | None], None]


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
        hold_s: float = 0.0,
        resend_interval_s: float = 0.5,
        client_factory: ClientFactory = triton_client,
    ) -> None:
        self.endpoints = Endpoints(
            [urls] if isinstance(urls, str) else list(urls),
            client_factory,
            health_interval_s=health_interval_s,
            probe_timeout_s=probe_timeout_s,
        )
        self.max_in_flight = max_in_flight
        self.timeout_s = timeout_s
        self.hold_s, self.resend_interval_s = hold_s, resend_interval_s
        self._held: dict[threading.Timer, Done] = {}  # batches waiting for an endpoint
        self._held_lock = threading.Lock()
        self._closed = False

    def check_health(self) -> None:
        """Check every endpoint now (the health thread does so every interval)."""
        self.endpoints.check_health()

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
        held_since: float | None = None,
        may_hold: bool = True,
    ) -> None:
        endpoint = self.endpoints.pick(spec.name, tried)
        if endpoint is None:
            error = last or InferenceUnavailable(f"no Triton endpoint serves {spec.name!r}")
            if may_hold and self._hold(spec, batch, priority, done, held_since, error):
                return
            done(None, error)
            return
        rows = batch.input_ids.shape[0]
        started = time.perf_counter()

        def answered(result: grpcclient.InferResult | None, error: object) -> None:
            # Whatever happens, `done` must run exactly once: its caller is waiting for it.
            self.endpoints.release(endpoint)
            elapsed = time.perf_counter() - started
            if error is not None or result is None:
                exc = error if isinstance(error, InferenceServerException) else None
                self._failed(spec, batch, priority, done, tried, endpoint, exc, error, held_since)
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
        held_since: float | None,
    ) -> None:
        """A request failed on `endpoint`: send it elsewhere, wait for one, or report the
        error."""
        exc = exc or InferenceServerException(str(error))
        reason = classify(exc)
        metrics.TRITON_ERRORS.labels(endpoint.url, spec.name, reason).inc()
        if reason == INVALID:
            done(None, ModelError(f"model {spec.name!r} rejected the request: {exc.message()}"))
            return
        if reason == UNAVAILABLE and len(self.endpoints) > 1:
            self.endpoints.mark_down(endpoint, exc.message() or reason)
        elif reason == MODEL_MISSING:
            self.endpoints.route_around(endpoint, spec.name)
        failure = InferenceUnavailable(
            f"inference on {spec.name!r} failed at {endpoint.url}: {exc.message()}",
            str(exc.status()),
        )
        if len(self.endpoints) > 1:
            log.info(
                "batch for %s failed at %s (%s); trying another", spec.name, endpoint.url, reason
            )
        # A timeout or an unknown error is not worth waiting for: the server answered, or
        # may have computed the batch already.
        may_hold = reason in (UNAVAILABLE, MODEL_MISSING)
        self._send(
            spec, batch, priority, done, tried | {endpoint.url}, failure, held_since, may_hold
        )

    def _hold(
        self,
        spec: ModelSpec,
        batch: Batch,
        priority: int,
        done: Done,
        held_since: float | None,
        error: DocqError,
    ) -> bool:
        """Send the batch again after `resend_interval_s` (to every endpoint, as if new),
        unless it has waited `hold_s` already; False when it may not wait."""
        now = time.monotonic()
        since = now if held_since is None else held_since
        if now - since + self.resend_interval_s > self.hold_s:
            if held_since is not None:
                log.warning(
                    "batch for %s: no Triton endpoint came back in %.0f s: %s",
                    spec.name,
                    now - since,
                    error,
                )
            return False

        def again() -> None:
            with self._held_lock:
                if self._held.pop(timer, None) is None:
                    return  # close() answered it
            self._send(spec, batch, priority, done, frozenset(), error, since)

        timer = threading.Timer(self.resend_interval_s, again)
        timer.daemon = True
        with self._held_lock:
            if self._closed:
                return False
            self._held[timer] = done
        if held_since is None:
            log.info(
                "batch for %s: no Triton endpoint now (%s); waiting up to %.0f s",
                spec.name,
                error,
                self.hold_s,
            )
        metrics.TRITON_HELD.labels(spec.name).inc()
        timer.start()
        return True

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
        with self._held_lock:
            self._closed = True
            held, self._held = self._held, {}
        for timer, done in held.items():  # what waits for an endpoint fails now, retryable
            timer.cancel()
            done(None, InferenceUnavailable("the Triton client is closed"))
        self.endpoints.close()
