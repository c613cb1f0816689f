"""How long `make up` takes until the stack is ready: first start and second start.

    git clone -q . /tmp/docq-clean && .venv/bin/python -m bench.startup /tmp/docq-clean \
        --out bench/startup.json

For a first start as a new machine sees it, remove Debian's Tesseract first
(`apt-get remove -y tesseract-ocr tesseract-ocr-eng`): `make up` installs it again, and
the JSON's `fresh_tesseract` says it did.

Runs `make up` in CHECKOUT (a clean clone, for a first start: the install, the demo model
builds and the services), polls `/readyz` until it says `ok` (Redis and Triton ready, the
startup models loaded), stops the stack (SIGINT to make, as Ctrl-C would) and starts it
again for the second start. The ports are make up's own (8080, 6379, 8000-8002, 5555):
nothing else may hold them. Each run's seconds, and the demo builds' own reports
(`build/*/report.json`: `build_seconds`, `phases_s`), go to the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

READYZ = "http://127.0.0.1:8080/readyz"
TESSDATA = Path("/usr/share/tesseract-ocr/5/tessdata/eng.traineddata")


def ready() -> bool:
    try:
        return bool(httpx.get(READYZ, timeout=2).json().get("status") == "ok")
    except (httpx.HTTPError, ValueError):
        return False


def start(checkout: Path, log: Path, timeout_s: float) -> float:
    """Seconds from `make up` to a ready stack; the stack is stopped again before return."""
    if ready():
        raise SystemExit(f"something already answers {READYZ}: stop it first")
    t0 = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["make", "up"], cwd=checkout, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        while not ready():
            if proc.poll() is not None:
                raise SystemExit(f"make up exited with {proc.returncode} (log: {log})")
            if time.monotonic() - t0 > timeout_s:
                raise SystemExit(f"not ready after {timeout_s} s (log: {log})")
            time.sleep(0.5)
        return round(time.monotonic() - t0, 1)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        deadline = time.monotonic() + 30
        while ready() and time.monotonic() < deadline:  # gone before the next start
            time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    ap.add_argument("checkout", type=Path, help="where to run make up (a clean clone)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--starts", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    checkout = args.checkout.resolve()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True
    ).stdout.strip()
    result: dict[str, Any] = {
        "command": f"python -m bench.startup CHECKOUT --starts {args.starts}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit,
        "cores": len(os.sched_getaffinity(0)),
        "fresh_venv": not (checkout / ".venv").exists(),
        "fresh_models": not (checkout / "model_repository" / "doc-type" / "1").exists(),
        # make system installs Debian's Tesseract data (OCR) when this file is missing
        "fresh_tesseract": not TESSDATA.exists(),
        "starts_s": [],
    }
    for i in range(args.starts):
        seconds = start(checkout, args.out.with_name(f"{args.out.stem}-{i + 1}.log"), args.timeout)
        result["starts_s"].append(seconds)
        print(f"start {i + 1}: ready in {seconds} s", flush=True)
    result["builds"] = {
        p.parent.name: {
            k: v for k, v in json.loads(p.read_text()).items() if "seconds" in k or k == "phases_s"
        }
        for p in sorted((checkout / "build").glob("*/report.json"))
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
