"""Send packed batches to Triton over gRPC, several requests in flight at once."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import partial

import numpy as np
import numpy.typing as npt
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from docq.errors import DocqError, InferenceUnavailable, ModelError
from docq.models import ModelSpec
from workers.packing import Batch


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

    def infer(
        self, spec: ModelSpec, batches: Sequence[Batch], *, priority: int = 0
    ) -> list[npt.NDArray[np.float32]]:
        """Logits for each batch, in order; at most `max_in_flight` requests outstanding.

        `priority` is Triton's request priority (1 is the highest; 0 means the model's
        default level): small jobs pass 1 so that their requests overtake a bulk job's in
        Triton's queue, when the model's dynamic batcher has priority levels.
        """
        results: list[npt.NDArray[np.float32] | None] = [None] * len(batches)
        errors: list[InferenceServerException] = []
        slots = threading.Semaphore(self.max_in_flight)
        pending = threading.Condition()
        outstanding = 0

        def done(i: int, result: grpcclient.InferResult | None, error: object) -> None:
            # Runs on gRPC's callback thread: whatever happens, release the slot and the
            # outstanding count, or infer() would wait forever.
            nonlocal outstanding
            try:
                if error is not None or result is None:
                    raise (
                        error
                        if isinstance(error, InferenceServerException)
                        else (InferenceServerException(str(error)))
                    )
                results[i] = result.as_numpy(spec.output_name)
            except InferenceServerException as exc:
                errors.append(exc)
            except Exception as exc:  # a broken answer must fail the batch, not hang it
                errors.append(InferenceServerException(f"unreadable answer: {exc!r}"))
            finally:
                slots.release()
                with pending:
                    outstanding -= 1
                    pending.notify_all()

        for i, batch in enumerate(batches):
            slots.acquire()
            if errors:
                slots.release()
                break
            ids = grpcclient.InferInput(spec.input_names[0], list(batch.input_ids.shape), "INT64")
            ids.set_data_from_numpy(batch.input_ids)
            mask = grpcclient.InferInput(
                spec.input_names[1], list(batch.attention_mask.shape), "INT64"
            )
            mask.set_data_from_numpy(batch.attention_mask)
            with pending:
                outstanding += 1
            try:
                self.client.async_infer(
                    spec.name,
                    [ids, mask],
                    callback=partial(done, i),  # called as callback(result=..., error=...)
                    outputs=[grpcclient.InferRequestedOutput(spec.output_name)],
                    client_timeout=self.timeout_s,
                    priority=priority,
                )
            except InferenceServerException as exc:
                done(i, None, exc)
        with pending:
            pending.wait_for(lambda: outstanding == 0)
        if errors:
            raise _as_docq_error(errors[0], spec.name)
        out: list[npt.NDArray[np.float32]] = []
        for i, r in enumerate(results):
            if r is None or r.shape[0] != batches[i].input_ids.shape[0]:
                raise ModelError(f"model {spec.name!r} returned no or misshapen logits")
            out.append(r)
        return out

    def close(self) -> None:
        self.client.close()
