"""Send packed batches to Triton over gRPC, several requests in flight at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from docq.errors import DocqError, InferenceUnavailable, ModelError
from docq.models import ModelSpec
from docq.text.packing import Batch

Logits = npt.NDArray[np.float32]
# Called once per request with the batch's logits, or with the error that replaced them.
Done = Callable[[Logits | None, DocqError | None], None]


def _as_docq_error(exc: InferenceServerException, model: str) -> DocqError:
    """Invalid requests are permanent; everything else (unavailable, overloaded, timed out,
    model loading, a restarted backend stub) may heal and is retried."""
    if "INVALID_ARGUMENT" in str(exc.status()):
        return ModelError(f"model {model!r} rejected the request: {exc.message()}")
    return InferenceUnavailable(
        f"inference on {model!r} failed: {exc.message()}", str(exc.status())
    )


class TritonInference:
    """A gRPC client to Triton; create one per process, after fork."""

    def __init__(self, url: str, *, max_in_flight: int, timeout_s: float) -> None:
        self.client = grpcclient.InferenceServerClient(url)
        self.max_in_flight = max_in_flight
        self.timeout_s = timeout_s

    def submit(self, spec: ModelSpec, batch: Batch, priority: int, done: Done) -> None:
        """Send one batch without waiting; `done` runs once, on gRPC's callback thread (or
        here, if the request cannot even be sent).

        `priority` is Triton's request priority (1 is the highest; 0 means the model's
        default level): small jobs pass 1 so that their requests overtake a bulk job's in
        Triton's queue, when the model's dynamic batcher has priority levels.
        """
        rows = batch.input_ids.shape[0]

        def answered(result: grpcclient.InferResult | None, error: object) -> None:
            # Whatever happens, `done` must run: its caller is waiting for it.
            if error is not None or result is None:
                exc = error if isinstance(error, InferenceServerException) else None
                done(None, _as_docq_error(exc or InferenceServerException(str(error)), spec.name))
                return
            try:
                logits = result.as_numpy(spec.output_name)
            except Exception as exc:  # a broken answer must fail the batch, not hang it
                done(None, InferenceUnavailable(f"unreadable answer from {spec.name!r}: {exc!r}"))
                return
            if logits is None or logits.shape[0] != rows:
                done(None, ModelError(f"model {spec.name!r} returned no or misshapen logits"))
                return
            done(logits, None)

        ids = grpcclient.InferInput(spec.input_names[0], list(batch.input_ids.shape), "INT64")
        ids.set_data_from_numpy(batch.input_ids)
        mask = grpcclient.InferInput(spec.input_names[1], list(batch.attention_mask.shape), "INT64")
        mask.set_data_from_numpy(batch.attention_mask)
        try:
            self.client.async_infer(
                spec.name,
                [ids, mask],
                callback=answered,  # called as callback(result=..., error=...)
                outputs=[grpcclient.InferRequestedOutput(spec.output_name)],
                client_timeout=self.timeout_s,
                priority=priority,
            )
        except InferenceServerException as exc:
            answered(None, exc)

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
        self.client.close()
