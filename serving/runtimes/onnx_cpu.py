"""Triton Python-backend model for the `onnx-cpu` runtime: ONNX Runtime on CPU.

Installed as `model_repository/<name>/<version>/model.py` (one import of this module) by
conversion/. It runs inside Triton's Python-backend stub with the project virtualenv's
packages (onnxruntime, numpy).

The request loop (reading, padding, splitting, errors) is execute.py, of the same package
(copied beside model.py as `docq_runtime/`); this file only loads the session and runs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

from .execute import OUTPUT, execute, parameter


class TritonPythonModel:
    """Runs an ONNX sequence classifier; pads each execute()'s requests into one ORT call."""

    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        threads = int(parameter(config, "intra_op_threads", "1"))
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        # One model execution at a time per instance: more instances, not inter-op
        # threads, are how this runtime scales on a CPU.
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        path = Path(args["model_repository"]) / args["model_version"] / "model.onnx"
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def execute(self, requests: list[Any]) -> list[Any] | None:
        """One response per request, in order (execute.py pads them into one ORT call)."""
        # ONNX Runtime checks every Gather index itself (INVALID_ARGUMENT when one is out
        # of range); negative ids, which it would wrap, execute() refuses.
        return execute(requests, self._run, "onnxruntime", invalid=(InvalidArgument,))

    def _run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        logits = self.session.run(
            [OUTPUT], {"input_ids": input_ids, "attention_mask": attention_mask}
        )[0]
        return logits.astype(np.float32, copy=False)

    def finalize(self) -> None:
        self.session = None
