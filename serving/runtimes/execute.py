"""The request loop every docq runtime shares (a runtime imports it as `from .execute
import ...`: the package travels beside each model.py as `docq_runtime/`; a model runs
alone inside Triton's Python-backend stub, which puts its version folder on `sys.path`;
it cannot import docq).

A runtime supplies one function over the whole batch of an execute(): either
`run(input_ids, attention_mask) -> logits` over the requests padded into one array pair,
or, with `ragged=True`, `run(Ragged) -> logits` over their real tokens only, flattened
into one `[tokens]` array with sequence offsets (Triton's dynamic batcher puts requests of
different lengths into one execute() when the inputs allow ragged batches). This module
reads the requests, joins them, calls `run` once and splits the logits back, so a fix to
the loop reaches every runtime.

Errors carry the code the client acts on. A request that is wrong (a missing or misshapen
input, a token id outside the model's vocabulary, as a tokenizer that does not match the
model gives) is INVALID_ARG: no retry and no other server will take it, so the worker
fails only its windows. A run that fails for any other reason is INTERNAL, which workers
retry. A runtime names the exceptions of its engine that mean "this input is wrong"
(`invalid`) and, where it knows it, its vocabulary size (ids beyond it are refused before
the run: on CUDA an out-of-range embedding index is a device-side assert, not an error).

Inputs are read through DLPack (`np.from_dlpack`), which is right with numpy 1 and 2: the
stub's `as_numpy()` reads zeros under numpy 2 (Triton 2.51). Outputs from a numpy array are
built with `pb_utils.Tensor(name, array)` (`Tensor.from_dlpack` on a numpy array crashes the
stub); under numpy 2 that array reaches the client empty, so a runtime that holds torch
returns a torch tensor, which goes out through DLPack (`Tensor.from_dlpack`), right with
either numpy.

A GPU runtime can overlap one batch's host work with the last one's kernels: with a
`Responder`, `run` may return a function that waits for the logits (the batch is queued on
the GPU, its copy back enqueued) instead of the logits, and execute() returns None at once;
the responder's thread waits and answers each request through its response sender. Triton's
Python backend allows this in the default (non-decoupled) mode since 24.06: one response per
request, sent with the FINAL flag, after execute() returned (the requests' input tensors are
freed on return, so `run` must have copied them by then). Logits `run` returns as such are
answered by execute() itself, as without a responder.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils  # provided by the stub at run time

INPUTS = ("input_ids", "attention_mask")
OUTPUT = "logits"

Run = Callable[..., Any]  # logits: a numpy array or a torch tensor


@dataclass(frozen=True)
class Ragged:
    """The real tokens of a batch of windows, without padding."""

    ids: np.ndarray  # [tokens] int64: every window's tokens, one window after another
    cu: np.ndarray  # [windows + 1] int32: window i is ids[cu[i]:cu[i + 1]]

    @property
    def windows(self) -> int:
        return self.cu.size - 1

    @property
    def longest(self) -> int:
        return int(np.diff(self.cu).max())


def output(logits: Any) -> Any:
    """The logits output tensor of one request's rows (float32)."""
    if isinstance(logits, np.ndarray):
        return pb_utils.Tensor(OUTPUT, np.ascontiguousarray(logits, dtype=np.float32))
    return pb_utils.Tensor.from_dlpack(OUTPUT, logits.contiguous())  # a torch tensor


def parameter(config: dict[str, Any], key: str, default: str) -> str:
    """A `parameters` entry of the model's config.pbtxt, as a string."""
    return str(config.get("parameters", {}).get(key, {}).get("string_value", default))


def invalid_arg(message: str) -> Any:
    """An error the client must not retry: the request itself is wrong."""
    return pb_utils.TritonError(message, pb_utils.TritonError.INVALID_ARG)


def check_ids(ids: np.ndarray, vocab_size: int | None) -> None:
    """ValueError unless every token id lies in [0, vocab_size)."""
    if ids.size == 0:
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or (vocab_size is not None and high >= vocab_size):
        bound = f"[0, {vocab_size})" if vocab_size is not None else "[0, ...)"
        raise ValueError(f"input_ids must lie in {bound}; this request holds {low}..{high}")


def read(request: Any, name: str) -> np.ndarray:
    """One [batch, sequence] input of a request; ValueError when missing or misshapen."""
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        raise ValueError(f"missing input {name!r}")
    array = np.from_dlpack(tensor)
    if array.ndim != 2:
        raise ValueError(f"{name} must be [batch, sequence], got shape {list(array.shape)}")
    return array


def lengths(mask: np.ndarray) -> np.ndarray:
    """Each row's real length; ValueError unless every row is ones then zeros.

    Ragged runtimes keep only the real tokens, so a mask with holes or left padding, which
    a padded runtime would honour, is refused rather than silently misread. A row of no
    tokens at all (Triton's zero-filled warm-up sample) runs its first token alone."""
    n = np.full(mask.shape[0], mask.shape[1], dtype=np.int64)
    if not mask.all():  # one pass: a long document's windows are full, they end here
        short = ~mask.all(axis=1)  # only the rows that are not full are read again
        part = mask[short] != 0
        counted = part.sum(axis=1)
        # ones then zeros: the first zero comes right after the last one, as many as there are
        if not np.array_equal(part.argmin(axis=1), counted):
            raise ValueError("attention_mask rows must be ones followed by zeros (right padding)")
        n[short] = counted
    return np.maximum(n, 1)


def flatten(batch: list[tuple[np.ndarray, np.ndarray]]) -> tuple[Ragged, list[tuple[int, int]]]:
    """Every request's real tokens in one flat array with window offsets, and each request's
    window range (its rows), from each request's ids and its rows' real lengths (`lengths`,
    which checked the masks)."""
    parts, sizes, bounds, row = [], [], [], 0
    for ids, n in batch:
        full = n == ids.shape[1]
        if full.all():  # full rows: the ids as they lie
            parts.append(ids.reshape(-1))
        elif full[:-1].all():  # a document's windows: full ones, then its shorter last one
            parts += [ids[:-1].reshape(-1), ids[-1, : n[-1]]]
        else:
            keep = np.arange(ids.shape[1]) < n[:, None]
            parts.append(ids[keep])  # row-major: each row's tokens stay together, in order
        sizes.append(n)
        bounds.append((row, row + ids.shape[0]))
        row += ids.shape[0]
    cu = np.zeros(row + 1, dtype=np.int32)
    np.cumsum(np.concatenate(sizes), out=cu[1:])
    return Ragged(np.concatenate(parts).astype(np.int64, copy=False), cu), bounds


def pad(
    batch: list[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Every request's rows in one pair of arrays, padded to the longest sequence (id 0,
    mask 0), and each request's row range in them."""
    rows = sum(ids.shape[0] for ids, _ in batch)
    longest = max(ids.shape[1] for ids, _ in batch)
    input_ids = np.zeros((rows, longest), dtype=np.int64)
    attention_mask = np.zeros((rows, longest), dtype=np.int64)
    bounds, row = [], 0
    for ids, mask in batch:
        n, length = ids.shape
        input_ids[row : row + n, :length] = ids
        attention_mask[row : row + n, :length] = mask
        bounds.append((row, row + n))
        row += n
    return input_ids, attention_mask, bounds


class Responder:
    """Answers batches from a thread of its own, so that execute() can return while its
    batch still runs on the GPU and the next execute()'s host work (reading, layout,
    staging, launches) overlaps this one's kernels.

    At most `depth` batches are in flight: `begin` waits for a slot (a third batch queued
    behind two would only wait on the GPU, holding its memory). Jobs run in order, each
    sends its batch's responses; `close` answers what is queued, then stops the thread.

    `settle`, called by execute() before it returns, waits for a slot and gives it back: with
    depth 2, until the batch before this one is answered. Triton forms the next batch when
    execute() returns, from the requests queued by then; returning while the GPU still had
    a batch ahead of this one made the next batch from the few that came in since, and the
    third execute() then waited in `begin` holding that small batch (the H200 pipeline ran
    91.7 rows an execution against 104.5 for Triton alone, 2026-12-04). Returning once only
    this batch is on the GPU still lets the next one's host work run under its kernels."""

    def __init__(self, depth: int = 2) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(depth)
        self._thread = threading.Thread(target=self._loop, name="docq-responder", daemon=True)
        self._thread.start()

    def begin(self) -> None:
        self._slots.acquire()

    def end(self) -> None:
        """Give back the slot of a batch answered in execute() itself."""
        self._slots.release()

    def settle(self) -> None:
        """Wait until a slot is free (with depth 2: only the batch just begun is in flight)."""
        self._slots.acquire()
        self._slots.release()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except Exception as exc:  # answer() catches the run's errors: this is a bug
                print(f"docq_runtime.execute: responder job failed: {exc!r}", file=sys.stderr)
            finally:
                self._slots.release()


def _send(sender: Any, response: Any) -> None:
    """`response` as its request's one and final response; a send the server refuses (its
    client gone, the request cancelled) is logged, and the batch's other requests still go."""
    try:
        sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    except Exception as exc:
        print(f"docq_runtime.execute: a response could not be sent: {exc}", file=sys.stderr)


def _failed(exc: BaseException, runtime: str, invalid: tuple[type[BaseException], ...]) -> Any:
    """The error response of every request of a run that raised `exc`."""
    message = f"{runtime} failed: {exc}"
    if isinstance(exc, invalid):
        error = invalid_arg(message)
    else:
        error = pb_utils.TritonError(message, pb_utils.TritonError.INTERNAL)
    return pb_utils.InferenceResponse(error=error)


def execute(
    requests: list[Any],
    run: Run,
    runtime: str,
    *,
    vocab_size: int | None = None,
    invalid: tuple[type[BaseException], ...] = (),
    ragged: bool = False,
    responder: Responder | None = None,
) -> list[Any] | None:
    """One response per request, in order: a bad request fails alone (INVALID_ARG), a
    failed run fails the requests of that run (`runtime` names it in the error): with
    INVALID_ARG when `run` raised one of `invalid`, else INTERNAL. With `ragged`, `run`
    takes the batch flattened (`Ragged`), and a request whose mask is not right-padded is
    refused on its own. With a `responder`, where `run` returns a function that waits for
    the logits, every response goes through its request's response sender (a bad request's
    at once, the batch's from the responder's thread once the logits are back) and execute()
    returns None once the batch before this one is answered (`Responder.settle`)."""
    responses: list[Any] = [None] * len(requests)
    valid: list[tuple[int, np.ndarray, np.ndarray]] = []  # (index, ids, mask or lengths)
    for i, request in enumerate(requests):
        try:
            ids, mask = (read(request, name) for name in INPUTS)
            if ids.shape != mask.shape:
                raise ValueError(
                    f"input_ids {list(ids.shape)} and attention_mask "
                    f"{list(mask.shape)} differ in shape"
                )
            check_ids(ids, vocab_size)
            valid.append((i, ids, lengths(mask) if ragged else mask))
        except Exception as exc:  # the client's fault: report it on its own response
            responses[i] = pb_utils.InferenceResponse(error=invalid_arg(str(exc)))

    def answer(logits: Any, bounds: list[tuple[int, int]], senders: list[Any] | None) -> None:
        """Each valid request's rows of `logits` (a function that waits for them: called
        here), or every one of them the run's error; sent through `senders` if given."""
        try:
            ready = logits() if callable(logits) else logits
            for (i, _, _), (a, b) in zip(valid, bounds, strict=True):
                responses[i] = pb_utils.InferenceResponse(output_tensors=[output(ready[a:b])])
        except Exception as exc:  # the runtime failed: every request of this run fails
            for i, _, _ in valid:
                responses[i] = _failed(exc, runtime, invalid)
        if senders is not None:
            for i, _, _ in valid:
                _send(senders[i], responses[i])

    if not valid:
        return responses
    batch = [(ids, rows) for _, ids, rows in valid]  # rows: the mask, or its lengths
    if responder is not None:
        responder.begin()
    try:
        if ragged:
            flat, bounds = flatten(batch)
            logits = run(flat)
        else:
            input_ids, attention_mask, bounds = pad(batch)
            logits = run(input_ids, attention_mask)
    except Exception as exc:  # the runtime failed: every request of this run fails
        for i, _, _ in valid:
            responses[i] = _failed(exc, runtime, invalid)
        if responder is not None:
            responder.end()
        return responses
    if responder is None or not callable(logits):  # answered here, returned to Triton
        answer(logits, bounds, None)
        if responder is not None:
            responder.end()
        return responses
    senders = [r.get_response_sender() for r in requests]  # taken while the requests live
    for i, response in enumerate(responses):
        if response is not None:  # a bad request's error: now
            _send(senders[i], response)
    responder.submit(lambda: answer(logits, bounds, senders))
    responder.settle()  # the next batch forms once the GPU has only this one ahead of it
    return None
