"""A stand-in for `triton_python_backend_utils`, to run a Triton Python-backend model.py
in-process (tests, and the GPU benchmark on a machine without tritonserver).

A request is a dict of numpy arrays: numpy arrays speak DLPack as Triton's tensors do.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np


class Tensor:
    def __init__(self, name: str, array: np.ndarray) -> None:
        self.name, self.array = name, array


class TritonError:
    def __init__(self, message: str) -> None:
        self.message = message


class InferenceResponse:
    def __init__(
        self, output_tensors: list[Tensor] | None = None, error: TritonError | None = None
    ) -> None:
        self.output_tensors, self.error = output_tensors or [], error


def get_input_tensor_by_name(request: dict[str, np.ndarray], name: str) -> np.ndarray | None:
    return request.get(name)


def load_runtime(path: Path) -> types.ModuleType:
    """Import a model.py with this module standing in for the stub's utilities (only for
    that import: the model binds it as `pb_utils`, and other importers keep theirs)."""
    name = "triton_python_backend_utils"
    before = sys.modules.get(name)
    sys.modules[name] = sys.modules[__name__]
    try:
        spec = importlib.util.spec_from_file_location(f"runtime_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if before is None:
            del sys.modules[name]
        else:
            sys.modules[name] = before
    return module


def instance(
    runtime: types.ModuleType, version: Path, kind: str, max_batch_size: int, **params: str
) -> Any:
    """An initialised TritonPythonModel serving the model version folder `version`."""
    config = {
        "name": version.parent.name,
        "max_batch_size": max_batch_size,
        "parameters": {k: {"string_value": v} for k, v in params.items()},
    }
    model = runtime.TritonPythonModel()
    model.initialize(
        {
            "model_config": json.dumps(config),
            "model_instance_kind": kind,
            "model_instance_device_id": "0",
            "model_repository": str(version.parent),
            "model_version": version.name,
        }
    )
    return model


def request(ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    return {"input_ids": ids, "attention_mask": mask}
