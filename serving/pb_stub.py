"""A stand-in for `triton_python_backend_utils`, to run a Triton Python-backend model.py
in-process (tests, and the GPU benchmark on a machine without tritonserver).

A request is a dict of numpy arrays: numpy arrays speak DLPack as Triton's tensors do.
`request()` makes one that also has a response sender, for a model that answers after
execute() returned (`Request.answer` waits for that answer).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import sys
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np


class Tensor:
    def __init__(self, name: str, array: np.ndarray) -> None:
        self.name, self.array = name, array

    @classmethod
    def from_dlpack(cls, name: str, tensor: Any) -> Tensor:
        return cls(name, np.from_dlpack(tensor))


class TritonError:
    UNKNOWN, INTERNAL, NOT_FOUND, INVALID_ARG, UNAVAILABLE, UNSUPPORTED = range(6)

    def __init__(self, message: str, code: int = INTERNAL) -> None:
        self.message, self.code = message, code


class InferenceResponse:
    def __init__(
        self, output_tensors: list[Tensor] | None = None, error: TritonError | None = None
    ) -> None:
        self.output_tensors, self.error = output_tensors or [], error


TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1


class InferenceResponseSender:
    """Keeps what a model sends; like Triton's default mode, refuses a second response or
    a response after the final flag."""

    def __init__(self) -> None:
        self.responses: list[InferenceResponse] = []
        self.final = threading.Event()

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        if self.final.is_set() or (response is not None and self.responses):
            raise RuntimeError("a default-mode model sends one response per request")
        if response is not None:
            self.responses.append(response)
        if flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            self.final.set()


class Request(dict[str, np.ndarray]):
    """A request's input arrays by name, with its response sender."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sender = InferenceResponseSender()

    def get_response_sender(self) -> InferenceResponseSender:
        return self.sender

    def answer(self, timeout: float = 30.0) -> InferenceResponse:
        """The one response sent for this request, once the final flag came with it."""
        if not self.sender.final.wait(timeout):
            raise TimeoutError("no final response")
        (response,) = self.sender.responses
        return response


def get_input_tensor_by_name(request: dict[str, np.ndarray], name: str) -> np.ndarray | None:
    return request.get(name)


def load_runtime(path: Path) -> types.ModuleType:
    """Import a runtime as Triton's stub would, with this module standing in for the stub's
    utilities: `path` is an installed model.py (the package beside it, `docq_runtime/`) or a
    module of serving/runtimes/ (that package). The package is imported afresh under the
    name it has beside model.py, only for this import: the runtime keeps what it bound, and
    other importers keep theirs. Returns the runtime's module (torch_gpu, ...), through
    which its parts are reached (`runtime.flat.attention`)."""
    from serving.runtimes import PACKAGE, SOURCES

    folder, runtime = path.parent, path.stem
    if path.name == "model.py":
        runtime = _runtime_of(path)
        folder = path.parent / PACKAGE if (path.parent / PACKAGE).is_dir() else SOURCES
    ours = [name for name in sys.modules if name.partition(".")[0] == PACKAGE]
    before = {name: sys.modules.pop(name) for name in ours}
    stub = sys.modules.get("triton_python_backend_utils")
    sys.modules["triton_python_backend_utils"] = sys.modules[__name__]
    try:
        _exec(PACKAGE, folder / "__init__.py", package=folder)
        return importlib.import_module(f"{PACKAGE}.{runtime}")
    finally:
        for name in [name for name in sys.modules if name.partition(".")[0] == PACKAGE]:
            del sys.modules[name]
        sys.modules.update(before)
        if stub is None:
            sys.modules.pop("triton_python_backend_utils", None)
        else:
            sys.modules["triton_python_backend_utils"] = stub


def _runtime_of(model: Path) -> str:
    """Which runtime an installed model.py imports (`from docq_runtime.<runtime> import`)."""
    from serving.runtimes import PACKAGE

    for node in ast.walk(ast.parse(model.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{PACKAGE}."):
            return (node.module or "").removeprefix(f"{PACKAGE}.")
    raise ValueError(f"{model} imports no runtime of {PACKAGE}")


def _exec(name: str, path: Path, package: Path | None = None) -> types.ModuleType:
    """Execute the module (or, with `package`, the package folder) at `path` as `name`."""
    locations = [str(package)] if package is not None else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=locations)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
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


def answers(model: Any, requests: list[Any]) -> list[InferenceResponse]:
    """`model`'s responses to `requests`, in order: what execute() returned, or, where it
    returned None (it answers from a thread of its own), what it sent for each. Each call
    is a new request to the model: a request object used before gets a new sender."""
    for r in requests:
        if isinstance(r, Request):
            r.sender = InferenceResponseSender()
    returned = model.execute(requests)
    if returned is not None:
        return list(returned)
    return [r.answer() for r in requests]


def request(ids: np.ndarray, mask: np.ndarray) -> Request:
    return Request(input_ids=ids, attention_mask=mask)
