"""Does everything the device runs find its packages there? (issue 19, part 5)

The H200 machine reaches no registry: a module it runs may import only what its image has
(`device-packages.txt`) or what `pack.py` carries (a profile's packages, pack.PROFILES, and the
trimmed tritonserver).
`unmet()` follows the imports of the modules the device runs (ENTRY and every docq module
they import, lazily or not, read with `ast`: nothing is imported here) and the requirements
of each carried wheel (read from this machine's installed metadata), and names what would
fail there. A check, not a measurement: tests/bench/test_carried.py runs it before every
GPU session (`pytest tests/bench/test_carried.py`).
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

from devstack.carry.pack import REPO, STUB_PYTHON, WHEELS

# What the device runs: the GPU benches, the served runtime (in the Python-backend stub),
# and what bench.gpu.pipeline starts there (the API, the workers, docq validate).
ENTRY = (
    "bench.gpu.serve", "bench.gpu.parity", "bench.gpu.pipeline", "serving.pb_stub",
    "serving.runtimes.torch_gpu", "api.main", "workers.app", "conversion.cli",
)  # fmt: skip
ROOTS = {"docq", "api", "workers", "serving", "client", "corpus", "conversion", "devstack", "bench"}
# Imported by a device module on a path the device never takes, each with why.
NOT_THERE = {
    "tensorrt": "NVIDIA's own index only; conversion.tensorrt says TensorRT is absent",
    "openvino": "the OpenVINO runtime, gated where it is installed, not on the GPU host",
    "pytriton": "the trimmed tritonserver folder of .devpack/tritonserver.tar.xz",
    "triton_python_backend_utils": "Triton's Python-backend stub provides it to the runtimes "
    "(serving/runtimes/execute.py); serving.pb_stub stands in for it in-process",
    "boto3": "the S3 blob store's client, imported only where DOCQ_BLOB_URL is s3:// (the "
    "device's stack keeps file bytes in a directory: docq.blobs.open_blobs)",
    "botocore": "boto3's own, as boto3",
}
# Excused where a profile carries no OCR binding (none does: what a scanned page costs is
# measured on the CPU, `python -m bench.sizing scans`): without Tesseract's data
# docq.extract.ocr answers ocr_unavailable before it imports the binding.
OCR_ABSENT = {
    "tesserocr": "OCR's binding; its language data (Debian's tesseract-ocr-eng) does not "
    "travel, so docq.extract.ocr answers ocr_unavailable before importing it",
}
DEVICE_LIST = REPO / "devstack" / "carry" / "device-packages.txt"
# Requirement markers as the device's python3 reads them (Python 3.12 on Linux).
DEVICE_ENV = {"python_version": STUB_PYTHON, "sys_platform": "linux", "extra": ""}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def device_packages() -> set[str]:
    lines = DEVICE_LIST.read_text(encoding="utf-8").splitlines()
    return {canonical(x) for x in lines if x.strip() and not x.startswith("#")}


def carried(wheels: list[str] = WHEELS) -> set[str]:
    return {canonical(Requirement(pin).name) for pin in wheels}


def _source(module: str) -> Path | None:
    path = REPO / Path(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def third_party_imports(entry: tuple[str, ...] = ENTRY) -> dict[str, set[str]]:
    """Top-level names of non-docq, non-stdlib imports -> the docq modules importing them."""
    seen: set[str] = set()
    found: dict[str, set[str]] = {}
    todo = list(entry)
    while todo:
        module = todo.pop()
        if module in seen or (path := _source(module)) is None:
            continue
        seen.add(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):  # relative ones from the module's package
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = ".".join(p for p in (package if node.level else "", node.module) if p)
                names = [base, *(f"{base}.{a.name}" for a in node.names)] if base else []
            for name in names:
                top = name.split(".")[0]
                if top in ROOTS:
                    todo.append(name)
                elif top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(module)
    return found


def excused(wheels: list[str]) -> dict[str, str]:
    """NOT_THERE, and OCR_ABSENT where `wheels` carry no OCR binding."""
    return NOT_THERE if "tesserocr" in carried(wheels) else NOT_THERE | OCR_ABSENT


def unmet(
    wheels: list[str] = WHEELS,
    entry: tuple[str, ...] = ENTRY,
    allowed: dict[str, str] | None = None,
) -> list[str]:
    """What the device would not find, one line each (empty: everything is there);
    `allowed`: the imports excused (default: excused(wheels))."""
    there = device_packages() | carried(wheels)
    distributions = md.packages_distributions()
    problems = []
    allowed = excused(wheels) if allowed is None else allowed
    for top, users in sorted(third_party_imports(entry).items()):
        if top in allowed:
            continue
        names = distributions.get(top)
        if not names:
            problems.append(f"import {top} ({', '.join(sorted(users))}): no installed package")
        elif not {canonical(n) for n in names} & there:
            problems.append(
                f"import {top} ({', '.join(sorted(users))}): {names[0]} is neither on the "
                "device (device-packages.txt) nor carried (pack.PROFILES)"
            )
    for pin in wheels:  # what each carried wheel needs, there
        requirement = Requirement(pin)
        for text in md.requires(requirement.name) or []:
            needed = Requirement(text)
            if needed.marker is not None and not needed.marker.evaluate(DEVICE_ENV):
                continue
            if canonical(needed.name) not in there:
                problems.append(f"{pin} requires {text}: neither on the device nor carried")
    return problems
