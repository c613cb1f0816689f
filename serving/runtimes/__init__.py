"""Triton model code for each runtime, copied into a model's version folder as model.py,
with the request loop they share (execute.py) beside it as docq_execute.py."""

from __future__ import annotations

import shutil
from pathlib import Path

SOURCES = Path(__file__).resolve().parent
HELPER = "docq_execute.py"  # the name model.py imports the shared loop by


def install(runtime: str, folder: Path) -> None:
    """Put runtime `runtime` (a module of this package: onnx_cpu, torch_gpu) into a model
    version folder: its model.py and the shared request loop beside it."""
    shutil.copyfile(SOURCES / f"{runtime}.py", folder / "model.py")
    shutil.copyfile(SOURCES / "execute.py", folder / HELPER)
