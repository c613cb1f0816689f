"""Start a real Triton Inference Server from the `tritonserver` binary in the nvidia-pytriton wheel.

`python -m serving.server` is what the Procfile runs and what the test fixtures start.
On a CPU machine the wheel's server runs the Python backend; three things make it work
(README, Platform notes):

- the Python-backend stub matching this interpreter is copied into `backends/python/`;
- the stub embeds libpython, so `LD_LIBRARY_PATH` must hold the matching libpython3.x.so;
- the stub takes its `sys.path` from the first `python3` on `PATH` (PYTHONPATH is not passed
  through), so this virtualenv's `bin` goes first: models then import onnxruntime from it.

On a GPU host the NGC container's own `tritonserver` is used instead (deploy/).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Annotated

import typer

from docq.config import get_settings
from docq.model_control import ADMIN_HEADER


def wheel_root() -> Path:
    """The `tritonserver` folder inside the installed nvidia-pytriton wheel."""
    # imported lazily: only the launcher needs the wheel that ships the server
    import pytriton

    return Path(pytriton.__file__).resolve().parent / "tritonserver"


def prepare_backends(root: Path | None = None) -> Path:
    """Put this interpreter's Python-backend stub where the server looks; return backends/."""
    root = root or wheel_root()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = root / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.exists():
        raise RuntimeError(f"nvidia-pytriton ships no Python-backend stub for Python {version}")
    target = root / "backends" / "python" / "triton_python_backend_stub"
    if not target.exists() or target.stat().st_size != stub.stat().st_size:
        tmp = target.with_suffix(".tmp")
        shutil.copy2(stub, tmp)
        os.replace(tmp, target)  # atomic: concurrent launchers never see half a binary
    target.chmod(0o755)
    return root / "backends"


def server_env(base: dict[str, str]) -> dict[str, str]:
    """The child environment: libpython on the loader path, this virtualenv first on PATH."""
    env = dict(base)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (libdir, env.get("LD_LIBRARY_PATH")) if p)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in (bindir, env.get("PATH")) if p)
    return env


# Triton's APIs that only a caller with the admin header may use, over HTTP and gRPC:
# docq's model control and catalogue send it; inference, health and metadata stay open.
RESTRICTED = "model-repository,model-config,statistics,shared-memory,trace,logging"


def restrictions(admin_key: str) -> list[str]:
    """The tritonserver flags that put RESTRICTED behind `triton-admin-key: admin_key`."""
    if not admin_key:
        return []
    rule = f"{RESTRICTED}:{ADMIN_HEADER}={admin_key}"
    return [f"--http-restricted-api={rule}", f"--grpc-restricted-protocol={rule}"]


# The Python backend's shared-memory region per stub: 64 MB at start and per growth (the
# backend's default before 23.09), where 24.10 starts at 1 MB and grows by 1 MB. Growing it
# while requests are in flight is what the backend crashes in, now and then (boost's
# lock_exception or SIGSEGV in TRITONBACKEND_ModelInstanceExecute, the whole server down:
# triton-inference-server/server#8882, payloads past the region; a CPU server of the
# failover test, 2026-12-05). A batch of 64 windows of 512 tokens sends 512 KB of ids and
# mask alone, so the 1 MB region grew under docq's load; 64 MB never has to. /dev/shm pages
# are taken only where written (deploy/ gives Triton 1-2 GB of it).
PYTHON_SHM = [
    f"--backend-config=python,shm-default-byte-size={64 << 20}",
    f"--backend-config=python,shm-growth-byte-size={64 << 20}",
]


def server_command(
    model_repository: Path,
    http_port: int,
    grpc_port: int,
    metrics_port: int,
    *,
    model_control: str = "none",
    load: list[str] | None = None,
    extra: list[str] | None = None,
    admin_key: str = "",
    address: str = "127.0.0.1",
) -> list[str]:
    """The tritonserver command line for this repository and these ports, listening on
    `address`; with an `admin_key`, Triton's admin APIs restricted to callers that send it."""
    root = wheel_root()
    cmd = [
        str(root / "bin" / "tritonserver"),
        f"--model-repository={model_repository}",
        f"--backend-directory={prepare_backends(root)}",
        # loopback by default: the local stack and tests expose nothing (deploy/ binds
        # wider; a fleet host of devstack/fleet, its own address)
        f"--http-address={address}",
        f"--grpc-address={address}",
        f"--metrics-address={address}",
        f"--http-port={http_port}",
        f"--grpc-port={grpc_port}",
        f"--metrics-port={metrics_port}",
        f"--model-control-mode={model_control}",
        "--strict-readiness=true",
        "--exit-on-error=false",
        "--log-verbose=0",
        *PYTHON_SHM,
    ]
    cmd += [f"--load-model={name}" for name in load or []]
    return cmd + restrictions(admin_key) + list(extra or [])


def startup_models(repository: Path, names: tuple[str, ...]) -> list[str]:
    """The startup models the repository holds (a missing one is reported, not fatal)."""
    present = [n for n in names if (repository / n / "config.pbtxt").exists()]
    for name in sorted(set(names) - set(present)):
        print(f"serving.server: startup model {name!r} is not in {repository}", file=sys.stderr)
    return present


def main(
    ctx: typer.Context,
    http_port: Annotated[int | None, typer.Option(help="default: DOCQ_TRITON_HTTP_PORT")] = None,
    grpc_port: Annotated[int | None, typer.Option(help="default: DOCQ_TRITON_GRPC_PORT")] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="default: DOCQ_TRITON_METRICS_PORT")
    ] = None,
    model_repository: Annotated[
        Path | None, typer.Option(help="default: DOCQ_MODEL_REPOSITORY")
    ] = None,
    model_control: Annotated[
        str | None, typer.Option(help="explicit, none or poll; default: DOCQ_MODEL_CONTROL")
    ] = None,
    address: Annotated[str, typer.Option(help="the address every port listens on")] = "127.0.0.1",
) -> None:
    """Replace this process with tritonserver (so that signals reach the server directly).

    In explicit model-control mode the startup and pinned models (DOCQ_MODEL_STARTUP,
    DOCQ_MODEL_PINNED) are loaded, and warmed, before the server reports ready; the others
    load on first use. Arguments after the options go to tritonserver as they are.
    """
    s = get_settings()
    repository = model_repository or s.model_repository
    mode = model_control or s.model_control
    cmd = server_command(
        repository,
        http_port or s.triton_http_port,
        grpc_port or s.triton_grpc_port,
        metrics_port or s.triton_metrics_port,
        model_control=mode,
        load=startup_models(repository, s.startup_models) if mode == "explicit" else None,
        extra=list(ctx.args),
        admin_key=s.triton_admin_key,
        address=address,
    )
    os.execve(cmd[0], cmd, server_env(dict(os.environ)))


if __name__ == "__main__":
    launcher = typer.Typer(add_completion=False)
    launcher.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
        main
    )
    launcher()
