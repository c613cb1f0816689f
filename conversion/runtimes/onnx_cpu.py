"""Triton Python-backend model for the `onnx-cpu` runtime: ONNX Runtime on CPU.

Copied to `model_repository/<name>/<version>/model.py` by conversion/. It runs inside
Triton's Python-backend stub with the project virtualenv's packages (onnxruntime, numpy).

Platform facts this file relies on (verified with the nvidia-pytriton 0.7.0 wheel, Triton
2.51): the stub reads input tensors as zeros through `as_numpy()` when numpy 2 is imported,
so inputs are read through DLPack (`np.from_dlpack(tensor)`), which is right with any numpy.
Outputs are built with `pb_utils.Tensor(name, array)`: `Tensor.from_dlpack` on a numpy array
crashes the stub, and the project pins numpy < 2 (pyproject.toml).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils  # provided by the stub at run time

INPUTS = ("input_ids", "attention_mask")
OUTPUT = "logits"


def _parameter(config: dict[str, Any], key: str, default: str) -> str:
    return str(config.get("parameters", {}).get(key, {}).get("string_value", default))


def _read(request: Any, name: str) -> np.ndarray:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        raise ValueError(f"missing input {name!r}")
    array = np.from_dlpack(tensor)
    if array.ndim != 2:
        raise ValueError(f"{name} must be [batch, sequence], got shape {list(array.shape)}")
    return array


class TritonPythonModel:
    """Runs an ONNX sequence classifier; pads each execute()'s requests into one ORT call."""

    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        threads = int(_parameter(config, "intra_op_threads", "1"))
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        # One model execution at a time per instance: more instances, not inter-op
        # threads, are how this runtime scales on a CPU.
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        path = Path(args["model_repository"]) / args["model_version"] / "model.onnx"
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def execute(self, requests: list[Any]) -> list[Any]:
        """One response per request, in order; a bad request fails alone, not the batch."""
        responses: list[Any] = [None] * len(requests)
        valid: list[tuple[int, np.ndarray, np.ndarray]] = []
        for i, request in enumerate(requests):
            try:
                ids, mask = (_read(request, name) for name in INPUTS)
                if ids.shape != mask.shape:
                    raise ValueError(
                        f"input_ids {list(ids.shape)} and attention_mask "
                        f"{list(mask.shape)} differ in shape"
                    )
                valid.append((i, ids, mask))
            except Exception as exc:  # the client's fault: report it on its own response
                responses[i] = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
        if valid:
            try:
                for i, logits in zip((v[0] for v in valid), self._run(valid), strict=True):
                    # Not Tensor.from_dlpack: with numpy's DLPack capsules the stub's
                    # deleter fails ("PyCapsule_GetPointer called with incorrect name") and
                    # the stub dies. Building from an array is right with numpy < 2.
                    out = pb_utils.Tensor(OUTPUT, np.ascontiguousarray(logits))
                    responses[i] = pb_utils.InferenceResponse(output_tensors=[out])
            except Exception as exc:  # the runtime failed: every request of this batch fails
                for i, _, _ in valid:
                    responses[i] = pb_utils.InferenceResponse(
                        error=pb_utils.TritonError(f"onnxruntime failed: {exc}")
                    )
        return responses

    def _run(self, batch: list[tuple[int, np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        """Pad all requests to the longest sequence (id 0, mask 0), run once, split back."""
        rows = sum(ids.shape[0] for _, ids, _ in batch)
        longest = max(ids.shape[1] for _, ids, _ in batch)
        input_ids = np.zeros((rows, longest), dtype=np.int64)
        attention_mask = np.zeros((rows, longest), dtype=np.int64)
        bounds, row = [], 0
        for _, ids, mask in batch:
            n, length = ids.shape
            input_ids[row : row + n, :length] = ids
            attention_mask[row : row + n, :length] = mask
            bounds.append((row, row + n))
            row += n
        logits = self.session.run(
            [OUTPUT], {"input_ids": input_ids, "attention_mask": attention_mask}
        )[0]
        logits = logits.astype(np.float32, copy=False)
        return [logits[a:b] for a, b in bounds]

    def finalize(self) -> None:
        self.session = None
