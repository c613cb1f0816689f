"""Cross-shard batching inside a worker process: one batcher, many shards, full batches.

A worker runs several shards at once (Celery's thread pool). Each shard hands its windows
to the process's one `Batcher` and waits for their logits; the batcher's dispatcher thread
packs the windows of every waiting shard together, so that small shards and 3-document
jobs still fill batches, and keeps a bounded number of requests in flight to Triton:

    shard threads ── windows ──> queue per (model, priority) ──> dispatcher ──> Triton
         ^                        sorted by length, cut by        (at most max_in_flight
         └──── logits rows <───── max_batch_size and budget        requests outstanding)

A batch leaves as soon as it is full (max_batch_size windows, or as many of the longest
queued windows as the token budget allows: padded tokens, or real ones for a ragged model).
A partial batch leaves once its oldest window has waited `max_wait_s`, so a lone small job
is never held longer than that. While every in-flight slot is taken the dispatcher waits
for one, and windows queue up into fuller batches: the server's speed sets the pace
(backpressure), and callers stop adding windows while `max_queued_windows` are waiting.
Batches of a higher Triton priority leave first; within a priority, the batch holding the
oldest window leaves first once it is overdue, so short windows are not starved by a
stream of long ones.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from queue import SimpleQueue

import numpy as np

from docq.errors import DocqError, InferenceUnavailable, ModelError, WindowsRejected
from docq.models import ModelSpec
from docq.text.packing import Batch, batch_fit, is_full, pack
from docq.text.windowing import Window
from workers import metrics
from workers.inference import Done, Logits

log = logging.getLogger(__name__)

# send(spec, batch, priority, done): start one request; `done` is called exactly once.
Send = Callable[[ModelSpec, Batch, int, Done], None]


class _Request:
    """One caller's windows and the logits rows filled in as their batches come back."""

    def __init__(self, n_windows: int, n_labels: int) -> None:
        self.logits: Logits = np.empty((n_windows, n_labels), dtype=np.float32)
        self.remaining = n_windows
        self.error: DocqError | None = None
        self.refused: dict[int, ModelError] = {}  # rows the model refused, each sent alone
        self.finished = threading.Event()
        self._lock = threading.Lock()

    def fill(self, row: int, logits: Logits) -> None:
        with self._lock:
            self.logits[row] = logits
            self.remaining -= 1
            if self.remaining == 0:
                self.finished.set()

    def refuse(self, row: int, error: ModelError) -> None:
        """The model refused this window on its own: its row is zeros, the rest go on."""
        with self._lock:
            self.refused[row] = error
            self.logits[row] = 0.0
            self.remaining -= 1
            if self.remaining == 0:
                self.finished.set()

    def fail(self, error: DocqError) -> None:
        with self._lock:
            if self.error is None:
                self.error = error
            self.finished.set()


@dataclass(slots=True)
class _Item:
    window: Window
    request: _Request
    row: int  # the window's row in its request
    since: float  # when it was queued (monotonic seconds)


@dataclass
class _Queue:
    """Windows waiting for one model at one priority."""

    spec: ModelSpec
    pad_id: int
    priority: int
    items: list[_Item] = field(default_factory=list)


class Batcher:
    """Packs the windows of every shard a process runs into shared batches; thread-safe."""

    def __init__(
        self,
        send: Send,
        *,
        max_wait_s: float = 0.005,
        max_in_flight: int = 4,
        max_queued_windows: int = 4096,
    ) -> None:
        if max_in_flight < 1 or max_queued_windows < 1 or max_wait_s < 0:
            raise ValueError("max_in_flight and max_queued_windows must be >= 1, max_wait_s >= 0")
        self._send = send
        self.max_wait_s = max_wait_s
        self.max_queued_windows = max_queued_windows
        self._slots = threading.Semaphore(max_in_flight)
        self._cv = threading.Condition()
        self._queues: dict[tuple[str, int, int], _Queue] = {}
        self._queued = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._probes: SimpleQueue[tuple[_Queue, _Item]] = SimpleQueue()
        self._prober: threading.Thread | None = None

    def infer(
        self, spec: ModelSpec, windows: Sequence[Window], *, pad_id: int = 0, priority: int = 0
    ) -> Logits:
        """The logits of each window, in order ([len(windows), labels]); blocks until all
        came back. Raises the DocqError of a batch that failed (retryable or not), or
        WindowsRejected when the model refused some windows, each sent alone, and answered
        the others (a permanent error fails its windows, not every window batched with them)."""
        request = _Request(len(windows), len(spec.labels))
        if not windows:
            return request.logits
        key = (spec.name, priority, pad_id)
        with self._cv:
            if self._closed:
                raise InferenceUnavailable("the batcher is closed")
            self._start()
            # Backpressure: wait while the queue is full (a request larger than the whole
            # queue still goes in when the queue is empty, or it would wait forever).
            self._cv.wait_for(
                lambda: (
                    self._queued == 0
                    or self._queued + len(windows) <= self.max_queued_windows
                    or self._closed
                )
            )
            queue = self._queues.setdefault(key, _Queue(spec, pad_id, priority))
            queue.spec = spec  # the model's latest config: a reload may change its limits
            now = time.monotonic()
            queue.items.extend(_Item(w, request, i, now) for i, w in enumerate(windows))
            self._queued += len(windows)
            self._cv.notify_all()
        while not request.finished.wait(timeout=1.0):
            if self._thread is None or not self._thread.is_alive():
                request.fail(InferenceUnavailable("the batcher's dispatcher stopped"))
        if request.error is not None:
            raise request.error
        if request.refused:
            raise WindowsRejected(request.logits, request.refused)
        return request.logits

    def queued(self) -> int:
        """Windows waiting for a batch (not yet sent)."""
        with self._cv:
            return self._queued

    def close(self) -> None:
        """Stop after sending what is queued; callers still waiting get their logits."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join()

    # --- the dispatcher thread ------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="docq-batcher", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            while self._dispatch_one():
                pass
        except Exception:  # never leave callers waiting on a dead thread
            log.exception("the batcher's dispatcher failed")
            self._fail_queued(InferenceUnavailable("the batcher's dispatcher failed"))

    def _dispatch_one(self) -> bool:
        """Wait for an in-flight slot and a batch worth sending, and send it; False when
        closed and drained."""
        self._slots.acquire()
        with self._cv:
            while True:
                picked, wait_s = self._pick(time.monotonic())
                if picked is not None:
                    break
                if self._closed and self._queued == 0:
                    self._slots.release()
                    return False
                self._cv.wait(timeout=wait_s)
            queue, items = picked
            self._queued -= len(items)
            self._cv.notify_all()  # room in the queue for waiting callers
        (batch,) = pack([it.window for it in items], len(items), pad_id=queue.pad_id)
        # pack() sorts its windows by length: batch.rows says which item each row is.
        rows = [items[i] for i in batch.rows]
        model = queue.spec.name
        metrics.BATCHES.labels(model).inc()
        metrics.WINDOWS.labels(model).inc(len(rows))
        metrics.BATCH_WINDOWS.labels(model).observe(len(rows))
        metrics.TOKENS.labels(model, "real").inc(batch.real_tokens)
        metrics.TOKENS.labels(model, "computed").inc(batch.computed_tokens)
        self._send_rows(queue, batch, rows, self._slots.release)
        return True

    def _send_rows(
        self, queue: _Queue, batch: Batch, rows: list[_Item], after: Callable[[], None]
    ) -> None:
        def done(logits: Logits | None, error: DocqError | None) -> None:
            try:
                self._answer(queue, rows, logits, error)
            finally:
                after()

        try:
            self._send(queue.spec, batch, queue.priority, done)
        except Exception as exc:  # send() reports errors through done; this is a bug guard
            done(None, InferenceUnavailable(f"could not send a batch: {exc!r}"))

    def _answer(
        self, queue: _Queue, rows: list[_Item], logits: Logits | None, error: DocqError | None
    ) -> None:
        if isinstance(error, ModelError) and len(rows) > 1:
            # A permanent error may be one window's: send each alone, one at a time (not in
            # the in-flight slots: rare), so that only those the model refuses fail. Sent
            # together, Triton would join them into one execution, refused whole.
            for item in rows:
                self._probes.put((queue, item))
            self._start_prober()
            return
        for r, item in enumerate(rows):
            if isinstance(error, ModelError):
                item.request.refuse(item.row, error)
            elif error is not None or logits is None:
                item.request.fail(error or InferenceUnavailable("no logits"))
            else:
                item.request.fill(item.row, logits[r])

    # --- the prober thread: windows of a refused batch, each sent alone ---------------

    def _start_prober(self) -> None:
        with self._cv:
            if self._prober is None or not self._prober.is_alive():
                self._prober = threading.Thread(
                    target=self._probe_forever, name="docq-batcher-probes", daemon=True
                )
                self._prober.start()

    def _probe_forever(self) -> None:
        """Send each window queued for a probe alone, the next once this one is answered
        (its answer fills or refuses the window's row, or fails its request)."""
        while True:
            queue, item = self._probes.get()
            if item.request.error is not None:
                continue  # its request failed meanwhile: the shard retries it whole
            answered = threading.Event()
            (single,) = pack([item.window], 1, pad_id=queue.pad_id)
            self._send_rows(queue, single, [item], answered.set)
            answered.wait()

    def _pick(self, now: float) -> tuple[tuple[_Queue, list[_Item]] | None, float | None]:
        """The next batch to send, or how long to wait for one (None: until woken)."""
        wait: float | None = None
        # Triton's priority 1 is its highest level; 0 is the model's default (lowest here).
        for key in sorted(self._queues, key=lambda k: (k[1] == 0, k[1])):
            queue = self._queues[key]
            # A request that already failed is retried as a whole: its windows need no model.
            live = [it for it in queue.items if it.request.error is None]
            self._queued -= len(queue.items) - len(live)
            queue.items = live
            if not queue.items:
                continue
            batches = _cut(queue)
            oldest = min(queue.items, key=lambda it: it.since)
            due = oldest.since + self.max_wait_s
            if now >= due or self._closed:
                chosen = next(b for b, _ in batches if any(it is oldest for it in b))
            else:
                full = [b for b, is_full in batches if is_full]
                if not full:
                    wait = due - now if wait is None else min(wait, due - now)
                    continue
                chosen = min(full, key=lambda b: min(it.since for it in b))
            taken = {id(it) for it in chosen}
            queue.items = [it for it in queue.items if id(it) not in taken]
            if not queue.items:
                del self._queues[key]
            return (queue, chosen), None
        return None, wait

    def _fail_queued(self, error: DocqError) -> None:
        with self._cv:
            for queue in self._queues.values():
                for item in queue.items:
                    item.request.fail(error)
            self._queues.clear()
            self._queued = 0
            self._cv.notify_all()


def _cut(queue: _Queue) -> list[tuple[list[_Item], bool]]:
    """The queue's windows, longest first, cut as the packer cuts them; each batch with
    whether it is full (a limit left the next window out, or it has room for none more)."""
    spec = queue.spec
    items = sorted(queue.items, key=lambda it: it.window.length, reverse=True)
    lengths = [it.window.length for it in items]
    limits = (spec.max_batch_size, spec.budget)
    out: list[tuple[list[_Item], bool]] = []
    start = 0
    while start < len(items):
        ahead = lengths[start : start + spec.max_batch_size]
        fit = batch_fit(ahead, *limits, ragged=spec.ragged)
        full = fit < len(items) - start or is_full(ahead[:fit], *limits, ragged=spec.ragged)
        out.append((items[start : start + fit], full))
        start += fit
    return out
