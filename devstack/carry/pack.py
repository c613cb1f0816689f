"""Fill `.devpack/` on this machine with what a GPU run needs and the device lacks.

The H200 machine reaches no registry and has python3 3.12 with torch, transformers,
numpy 2, grpcio, protobuf, rich and typer (the device README's KINDS.md lists the rest).
Everything else travels with the call, 64 MiB at most in all, the working tree included
(`budget()` refuses a pack that would not fit):

- `tritonserver.tar.xz`: the tritonserver of the installed nvidia-pytriton wheel, trimmed
  to what runs it (README, Platform notes): `bin/`, `backends/python`, the
  Python 3.12 stub and the libraries of `nvidia_pytriton.libs/` that `ldd` names for the
  binary and the Python backend; the other stubs and the bundled libpython 3.13 stay here.
  The layout of site-packages is kept, so the binaries' RPATHs find their libraries, with
  an empty `pytriton/__init__.py`: on PYTHONPATH, `serving.server` finds the server there.
- `site.tar.xz`: the Python packages of the profile (WHEELS, or the convert profile's),
  installed here for cp312 (`pip install --target`) and packed as one archive of their
  files, `site/…`: xz over the whole folder packs 22.8 MB of zip wheels into 14.7 MB.
- `debs/`: Debian's redis-server (the packages named in DEBS: the server and the
  libraries `ldd` names for it), unpacked there into a folder of their own, never into
  `/`; remote.sh puts on the loader's path only the libraries the device lacks.
- `tree.tar.xz` (`--tree`): this checkout's files as they are now, tracked and untracked
  but not ignored, with TREE.txt (HEAD and the files changed from it). The working tree
  travels with every call as it is at that moment, while others edit it; a run that must
  be the one rehearsed unpacks this copy and runs there (docs/performance.md).

    .venv/bin/python -m devstack.carry.pack [--profile convert]  # run(..., carry=[".devpack"])

On the device, `source devstack/carry/remote.sh` unpacks them into /tmp and sets the paths.
To carry more (another script's dependencies), add names to WHEELS, or a function that
writes into DEVPACK, and call it from main(). `--python 3.11 --site-only --devpack DIR`
builds the same site archive for this machine's python, to rehearse it here.
"""

from __future__ import annotations

import argparse
import io
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from devstack.lock import pins

REPO = Path(__file__).resolve().parents[2]
DEVPACK = REPO / ".devpack"
SITE = REPO / ".venv" / "lib" / "python3.11" / "site-packages"
STUB_PYTHON = "3.12"  # the device's python3
LIMIT_MIB = 64  # the run tool's limit for the working tree and carried paths together
# Left free under it: the tree grows by the commits made between packing and the call.
MARGIN_MIB = 1
XZ = 9 | lzma.PRESET_EXTREME  # 7% smaller than preset 6 on the server (26.9 -> 25.0 MB)

# Missing on the device, each pinned to its version in uv.lock (what this checkout is tested
# with). Only what runs there: the bench and the GPU test need tritonclient (gRPC) and,
# through serving.server, docq's settings (pydantic-settings).
WHEELS = pins(
    # tritonclient[grpc]: grpcio, protobuf, numpy and packaging are on the device already
    "tritonclient",
    "python-rapidjson",
    # docq.config: pydantic-settings
    "pydantic",
    "pydantic-core",
    "pydantic-settings",
    "annotated-types",
    "typing-inspection",
    "python-dotenv",
    # the whole pipeline (bench/gpu/pipeline.py): the API, the Celery workers, the job store
    "celery",
    "kombu",
    "billiard",
    "vine",
    "amqp",
    "click-didyoumean",
    "click-plugins",
    "click-repl",
    "prompt-toolkit",
    "wcwidth",
    "tzlocal",
    "redis",
    "standardwebhooks",
    "zstandard",
    "python-json-logger",
    "fastapi",
    "starlette",
    "opentelemetry-api",
    "python-multipart",
    "uvicorn",
    "swagger-ui-bundle-v2",  # api/docs.py serves the docs' assets from it
    # the extract worker (docq.extract): PDF, DOCX, HTML; lxml and pillow are there already.
    # OCR (tesserocr) does not travel: scans fail there as ocr_unavailable (carried.OCR_ABSENT);
    # what a scanned page costs is measured on the CPU (`python -m bench.sizing scans`).
    "pypdfium2",
    "python-docx",
    "selectolax",
    # the old architecture on the same GPU (bench/baseline/app.py)
    "gunicorn",
    "uvicorn-worker",
)

# Debian packages for redis-server (Debian 12's 7.0.15, as `make up` installs it): the
# server, whose binary is redis-tools' redis-check-rdb, and those of the libraries `ldd`
# names for it that the H200 image lacks: remote.sh found only libjemalloc and liblzf
# missing there (2026-12-03); libssl3, libsystemd0, libgcrypt20 and the compression
# libraries it has (they were 3.7 MB of the call's 64 MiB).
DEBS = [
    "redis-server",
    "redis-tools",
    "libjemalloc2",
    "liblzf1",
    "libatomic1",
]

# `docq convert` on the device's CPU cores (bench.gpu.parity run --cpu): the exporter and
# ONNX Runtime at the versions tested here. The device's own transformers (5.17) exports an
# attention graph that ONNX Runtime's optimizer does not fuse, and convert refuses it
# (2026-12-06); transformers 5.25 needs a newer huggingface-hub, and that its own deps.
CONVERT_WHEELS = pins(
    *("transformers", "huggingface-hub", "kernels", "tomlkit", "regex", "click", "hf-xet"),
    *("httpx2", "httpcore2", "truststore", "anyio", "idna", "h11", "typing-extensions"),
    "onnxruntime",
)

PROFILES = {"text": WHEELS, "convert": WHEELS + CONVERT_WHEELS}

INIT = '''"""nvidia-pytriton's tritonserver folder only, trimmed by docq's devstack.carry."""\n'''

PLATFORMS = [
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]


def xz_tar(out: Path) -> tarfile.TarFile:
    """`out` opened as a new .tar.xz at XZ (typeshed allows presets 0-9 only: lzma also takes
    9 | PRESET_EXTREME)."""
    return tarfile.open(out, "w:xz", preset=XZ)  # type: ignore[call-overload]


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
    with xz_tar(out) as tar:
        for path in members:
            tar.add(path, arcname=str(path.relative_to(SITE)))
        # `import pytriton` finds the trimmed folder, so serving.server.wheel_root() works
        # there unchanged; the wheel's own __init__ imports what was left behind.
        init = INIT.encode()
        info = tarfile.TarInfo("pytriton/__init__.py")
        info.size, info.mode = len(init), 0o644
        tar.addfile(info, io.BytesIO(init))
    return out


def _pip_for(python: str) -> list[str]:
    """pip's options for cp`python` manylinux binaries, no dependencies (each is pinned)."""
    cmd = ["--no-deps", "--only-binary=:all:", "--python-version", python, "--implementation"]
    cmd.append("cp")
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    return cmd


def install_site(site: Path, pins: list[str], python: str = STUB_PYTHON) -> Path:
    """`pins` installed into `site` for cp`python` as the device's pip would (--target)."""
    shutil.rmtree(site, ignore_errors=True)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-compile", *_pip_for(python)]
    subprocess.run([*cmd, "--target", str(site), *pins], check=True)
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts naming this python
    return site


def site_archive(out: Path, folder: Path) -> Path:
    """`out` (a .tar.xz) of `folder`'s site/, as remote.sh extracts it."""
    with xz_tar(out) as tar:
        tar.add(folder / "site", arcname="site")
    return out


def pack_site(dest: Path, pins: list[str], python: str = STUB_PYTHON) -> Path:
    """site.tar.xz: site/, the packages of `pins` for cp`python`; extracted into one
    folder, it is the layout remote.sh puts on PYTHONPATH."""
    with tempfile.TemporaryDirectory() as tmp:
        install_site(Path(tmp) / "site", pins, python)
        return site_archive(dest / "site.tar.xz", Path(tmp))


def download_debs(dest: Path, names: list[str]) -> None:
    """The .deb files of `names` for this machine's Debian release (apt-get download)."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.deb"):
        old.unlink()
    subprocess.run(["apt-get", "download", *names], cwd=dest, check=True)


def tree_files(repo: Path = REPO) -> list[str]:
    """The checkout's files that travel with a call: tracked and untracked, not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    # a deleted file is still listed until committed
    return sorted(n.decode() for n in listed if n and (repo / n.decode()).is_file())


def tree_note() -> str:
    """Which code this is (TREE.txt's text): HEAD and what differs from it now; 'unknown'
    where there is no git."""
    try:
        head, status = (
            subprocess.run(["git", *cmd], cwd=REPO, capture_output=True, text=True).stdout
            for cmd in (["rev-parse", "HEAD"], ["status", "--short"])
        )
    except OSError:
        return "unknown"
    return f"HEAD {head}changed from it when packed or run:\n{status}"


def pack_tree(dest: Path) -> Path:
    """tree.tar.xz: the checkout's files now (tree_files) and TREE.txt naming HEAD and what
    differs from it."""
    out = dest / "tree.tar.xz"
    with xz_tar(out) as tar:
        for name in tree_files():
            tar.add(REPO / name, arcname=name, recursive=False)
        note = tree_note().encode()
        info = tarfile.TarInfo("TREE.txt")
        info.size, info.mode = len(note), 0o644
        tar.addfile(info, io.BytesIO(note))
    return out


def budget(devpack: Path, repo: Path = REPO, limit_mib: float = LIMIT_MIB) -> tuple[bool, str]:
    """Whether `devpack` and the working tree fit one call's limit, less MARGIN_MIB; and the
    sizes, as a line to print."""
    packed = sum(p.stat().st_size for p in devpack.rglob("*") if p.is_file())
    tree = sum((repo / name).stat().st_size for name in tree_files(repo))
    total = (packed + tree) / 2**20
    line = (
        f"{devpack.name}: {packed / 2**20:.1f} MiB, the working tree {tree / 2**20:.1f} MiB: "
        f"{total:.1f} MiB of the call's {limit_mib:g} (kept free: {MARGIN_MIB})"
    )
    return total <= limit_mib - MARGIN_MIB, line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--profile", choices=PROFILES, default="text",
        help="convert: docq convert's exporter too (parity run --cpu)",
    )  # fmt: skip
    ap.add_argument("--skip-server", action="store_true", help="keep the packed server")
    ap.add_argument("--tree", action="store_true", help="only tree.tar.xz, the checkout now")
    ap.add_argument(
        "--tree-note", action="store_true", help="only TREE.txt: the commit the calls will run"
    )
    ap.add_argument("--site-only", action="store_true", help="only site.tar.xz")
    ap.add_argument("--python", default=STUB_PYTHON, help="the site's python (3.11: this one)")
    ap.add_argument("--devpack", type=Path, default=DEVPACK, help="the folder to fill")
    args = ap.parse_args()
    dest: Path = args.devpack
    dest.mkdir(parents=True, exist_ok=True)
    if args.tree_note:  # the working tree travels as is; this names its commit
        (dest / "TREE.txt").write_text(tree_note())
        print(f"wrote {dest / 'TREE.txt'}: {tree_note().splitlines()[0]}")
    elif args.tree:
        print(f"packed {pack_tree(dest)}")
    elif args.site_only:
        print(f"packed {pack_site(dest, PROFILES[args.profile], args.python)}")
    else:
        if not args.skip_server or not (dest / "tritonserver.tar.xz").exists():
            print(f"packed {pack_tritonserver(dest)}")
        print(f"packed {pack_site(dest, PROFILES[args.profile], args.python)}")
        download_debs(dest / "debs", DEBS)
    fits, line = budget(dest)
    print(line)
    if not fits:
        sys.exit(f"{dest} and the working tree would not travel in one call: carry less")


if __name__ == "__main__":
    main()
