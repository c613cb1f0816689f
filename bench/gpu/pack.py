"""Fill `.devpack/` on this machine with what a GPU run needs and the device lacks.

The H200 machine reaches no registry and has python3 3.12 with torch, transformers,
numpy 2, grpcio, protobuf, rich and typer (the device README's KINDS.md lists the rest).
Everything else travels with the call, 64 MiB at most in all:

- `tritonserver.tar.xz`: the tritonserver of the installed nvidia-pytriton wheel, trimmed
  to what runs it (README, Platform notes): `bin/`, `backends/python`, the
  Python 3.12 stub and the libraries of `nvidia_pytriton.libs/` that `ldd` names for the
  binary and the Python backend; the other stubs and the bundled libpython 3.13 stay here.
  The layout of site-packages is kept, so the binaries' RPATHs find their libraries, with
  an empty `pytriton/__init__.py`: on PYTHONPATH, `serving.server` finds the server there.
- `wheels/`: cp312 manylinux wheels of the Python packages named in WHEELS.
- `debs/`: Debian's redis-server (the packages named in DEBS: the server and the
  libraries `ldd` names for it), unpacked there into a folder of their own, never into
  `/`; remote.sh puts on the loader's path only the libraries the device lacks.
- `tree.tar.xz` (`--tree`): this checkout's files as they are now, tracked and untracked
  but not ignored, with TREE.txt (HEAD and the files changed from it). The working tree
  travels with every call as it is at that moment, while others edit it; a run that must
  be the one rehearsed unpacks this copy and runs there (bench/gpu/RESULTS-pipeline.md).

    .venv/bin/python -m bench.gpu.pack            # then: run(..., carry=[".devpack"])

On the device, `source bench/gpu/remote.sh` unpacks both into /tmp and sets the paths.
To carry more (another script's dependencies), add pins to WHEELS, or a function that
writes into DEVPACK, and call it from main().
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEVPACK = REPO / ".devpack"
SITE = REPO / ".venv" / "lib" / "python3.11" / "site-packages"
STUB_PYTHON = "3.12"  # the device's python3
LIMIT_MIB = 64  # the run tool's limit for the working tree and carried paths together

# Missing on the device, each pinned to the version this checkout is tested with. Only
# what runs there: the bench and the GPU test need tritonclient (gRPC) and, through
# serving.server, docq's settings (pydantic-settings).
WHEELS = [
    # tritonclient[grpc]: grpcio, protobuf, numpy and packaging are on the device already
    "tritonclient==2.73.0",
    "python-rapidjson==1.25",
    # docq.config: pydantic-settings
    "pydantic==2.14.4",
    "pydantic-core==2.50.5",
    "pydantic-settings==2.16.3",
    "annotated-types==0.8.0",
    "typing-inspection==0.4.5",
    "python-dotenv==1.2.4",
    # the whole pipeline (bench/gpu/pipeline.py): the API, the Celery workers, the job store
    "celery==5.7.0",
    "kombu==5.7.0",
    "billiard==4.3.2",
    "vine==5.1.0",
    "amqp==5.4.2",
    "click-didyoumean==0.3.1",
    "click-plugins==1.1.1.2",
    "click-repl==0.4.1",
    "prompt-toolkit==3.0.53",
    "wcwidth==0.9.4",
    "tzlocal==5.4.5",
    "redis==8.1.0",
    "standardwebhooks==1.1.0",
    "zstandard==0.25.0",
    "python-json-logger==4.2.0",
    "fastapi==0.165.0",
    "starlette==1.10.0",
    "opentelemetry-api==1.45.2",
    "python-multipart==0.0.34",
    "uvicorn==0.54.0",
    "swagger-ui-bundle-v2==5.31.0",  # api/docs.py serves the docs' assets from it
    # the extract worker (docq.extract): PDF, DOCX, HTML; lxml and pillow are there already.
    # Not tesserocr: Tesseract's language data is a Debian package the device lacks, so OCR
    # is unavailable there (carried.NOT_THERE) and scans fail as ocr_unavailable.
    "pypdfium2==5.15.2",
    "python-docx==1.2.0",
    "selectolax==1.0.2",
    # the old architecture on the same GPU (bench/baseline/app.py)
    "gunicorn==27.0.1",
    "uvicorn-worker==0.4.0",
]

# Debian packages for redis-server (Debian 12's 7.0.15, as `make up` installs it): the
# server, whose binary is redis-tools' redis-check-rdb, and the libraries `ldd` names for
# it (libc6, libstdc++6 and libgcc-s1 left out: every image that runs torch has them).
DEBS = [
    "redis-server",
    "redis-tools",
    "libjemalloc2",
    "liblzf1",
    "libatomic1",
    "libssl3",
    "libsystemd0",
    "libcap2",
    "libgcrypt20",
    "libgpg-error0",
    "liblz4-1",
    "liblzma5",
    "libzstd1",
]

INIT = (
    '''"""nvidia-pytriton's tritonserver folder only, trimmed by docq's bench/gpu/pack.py."""\n'''
)

PLATFORMS = [
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]


def needed_libs(libs: Path, binaries: list[Path]) -> list[str]:
    """The files of `libs` that the binaries load, directly or through each other (ldd)."""
    env = {**os.environ, "LD_LIBRARY_PATH": str(libs)}
    out = subprocess.run(
        ["ldd", *map(str, binaries)], capture_output=True, text=True, env=env, check=True
    ).stdout
    names = {line.split()[0] for line in out.splitlines() if "=>" in line}
    names = {name for name in names if (libs / name).exists()}
    return sorted(names)


def pack_tritonserver(dest: Path) -> Path:
    """tritonserver.tar.xz: the trimmed server, as pytriton/… and nvidia_pytriton.libs/…"""
    root = SITE / "pytriton" / "tritonserver"
    libs = SITE / "nvidia_pytriton.libs"
    python_backend = root / "backends" / "python"
    binaries = [root / "bin" / "tritonserver", python_backend / "libtriton_python.so"]
    members = [root / "bin" / "tritonserver", python_backend / "libtriton_python.so"]
    members.append(python_backend / "triton_python_backend_utils.py")
    members.append(root / "python_backend_stubs" / STUB_PYTHON / "triton_python_backend_stub")
    members += [libs / name for name in needed_libs(libs, binaries)]
    out = dest / "tritonserver.tar.xz"
    with tarfile.open(out, "w:xz", preset=6) as tar:
        for path in members:
            tar.add(path, arcname=str(path.relative_to(SITE)))
        # `import pytriton` finds the trimmed folder, so serving.server.wheel_root() works
        # there unchanged; the wheel's own __init__ imports what was left behind.
        init = INIT.encode()
        info = tarfile.TarInfo("pytriton/__init__.py")
        info.size, info.mode = len(init), 0o644
        tar.addfile(info, io.BytesIO(init))
    return out


def download_wheels(dest: Path, pins: list[str]) -> None:
    """cp312 manylinux wheels of `pins`, no dependencies (each one is pinned above)."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["--python-version", STUB_PYTHON, "--implementation", "cp", "-d", str(dest)]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    subprocess.run([*cmd, *pins], check=True)


def download_debs(dest: Path, names: list[str]) -> None:
    """The .deb files of `names` for this machine's Debian release (apt-get download)."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.deb"):
        old.unlink()
    subprocess.run(["apt-get", "download", *names], cwd=dest, check=True)


def pack_tree(dest: Path) -> Path:
    """tree.tar.xz: the checkout's files now (git ls-files: tracked and untracked, not
    ignored) and TREE.txt naming HEAD and what differs from it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    status = subprocess.run(
        ["git", "status", "--short"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    out = dest / "tree.tar.xz"
    with tarfile.open(out, "w:xz", preset=6) as tar:
        for name in sorted(n.decode() for n in listed if n):
            if (REPO / name).is_file():  # a deleted file is still listed until committed
                tar.add(REPO / name, arcname=name, recursive=False)
        note = f"HEAD {head}changed from it when packed:\n{status}".encode()
        info = tarfile.TarInfo("TREE.txt")
        info.size, info.mode = len(note), 0o644
        tar.addfile(info, io.BytesIO(note))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-server", action="store_true", help="keep the packed server")
    ap.add_argument("--tree", action="store_true", help="only tree.tar.xz, the checkout now")
    args = ap.parse_args()
    DEVPACK.mkdir(exist_ok=True)
    if args.tree:
        print(f"packed {pack_tree(DEVPACK)}")
        return
    if not args.skip_server or not (DEVPACK / "tritonserver.tar.xz").exists():
        print(f"packed {pack_tritonserver(DEVPACK)}")
    download_wheels(DEVPACK / "wheels", WHEELS)
    download_debs(DEVPACK / "debs", DEBS)
    total = sum(p.stat().st_size for p in DEVPACK.rglob("*") if p.is_file())
    print(f".devpack: {total / 2**20:.1f} MiB (the call's limit, with the tree: {LIMIT_MIB})")
    if total > (LIMIT_MIB - 8) * 2**20:
        sys.exit(".devpack leaves too little of the call's 64 MiB for the working tree")


if __name__ == "__main__":
    main()
