"""Triton model code for each runtime: one package, installed whole beside a model's
model.py as `docq_runtime/`, so that its modules import each other as the package they are.

    model_repository/<name>/<version>/model.py         from docq_runtime.torch_gpu import ...
    model_repository/<name>/<version>/docq_runtime/    this folder, copied

Triton's Python-backend stub puts the version folder on `sys.path` and imports model.py;
model.py is one import of the runtime's module (`onnx_cpu`, `openvino_cpu`, `torch_gpu`),
and every module here imports its siblings relatively (`from .execute import execute`,
`from . import flat`). So the code in this repository and the code Triton runs import the
same names, and a reader, mypy and `lint-imports` follow every import (the contracts in
pyproject.toml keep this package from importing docq: it runs alone inside the stub).

    execute.py                        the request loop every runtime shares
    onnx_cpu.py, openvino_cpu.py      the CPU runtimes' models
    torch_gpu.py                      the GPU runtime's model; its parts:
      graphs.py, staging.py             CUDA graphs; inputs staged in pinned memory
      flat/                             the unpadded encoder (its __init__ is the map)
      kernels/                          its OpenAI Triton kernels, one module each

This module (stdlib only) also holds the installer; it travels with the package, unused.
"""

from __future__ import annotations

import shutil
from pathlib import Path

SOURCES = Path(__file__).resolve().parent
PACKAGE = "docq_runtime"  # the package's name beside model.py
RUNTIMES = ("onnx_cpu", "openvino_cpu", "torch_gpu")


def model_py(runtime: str) -> str:
    """The model.py that serves `runtime`: one import from the package beside it."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {RUNTIMES}, not {runtime!r}")
    return (
        f'"""docq\'s {runtime} runtime: its code is the package beside this file '
        f'(serving/runtimes/ in docq)."""\n\n'
        f"from {PACKAGE}.{runtime} import TritonPythonModel\n\n"
        f'__all__ = ["TritonPythonModel"]\n'
    )


def install(runtime: str, folder: Path, sources: Path = SOURCES) -> None:
    """Put runtime `runtime` (a module of this package: onnx_cpu, torch_gpu...) into a model
    version folder: its model.py and, beside it, the package as `docq_runtime/` (from
    `sources`: this package, or another checkout's, as bench.gpu.host compares them)."""
    (folder / "model.py").write_text(model_py(runtime), encoding="utf-8")
    target = folder / PACKAGE
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(sources, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
