"""Triton model code for each runtime, copied into a model's version folder as model.py,
with the request loop they share (execute.py) beside it as docq_execute.py."""

from __future__ import annotations

import shutil
from pathlib import Path

SOURCES = Path(__file__).resolve().parent
HELPER = "docq_execute.py"  # the name model.py imports the shared loop by
# The modules a runtime's model.py imports besides the shared loop, in import order:
# {name beside model.py: source module of this package}.
HELPERS: dict[str, dict[str, str]] = {
    "torch_gpu": {"docq_kernels.py": "kernels.py", "docq_flat.py": "flat.py"},
}


def helpers(runtime: str) -> dict[str, str]:
    """Every file copied beside `runtime`'s model.py: {name there: source here}."""
    return {HELPER: "execute.py", **HELPERS.get(runtime, {})}


def install(runtime: str, folder: Path, sources: Path = SOURCES) -> None:
    """Put runtime `runtime` (a module of this package: onnx_cpu, torch_gpu) into a model
    version folder: its model.py and, beside it, the shared request loop and the modules
    it imports (from `sources`: this package, or another checkout's, as bench.gpu.host
    compares them)."""
    shutil.copyfile(sources / f"{runtime}.py", folder / "model.py")
    for name, source in helpers(runtime).items():
        shutil.copyfile(sources / source, folder / name)
