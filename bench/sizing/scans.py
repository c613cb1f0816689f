"""The CPU a scanned page costs docq (issue 21): `--scans` 300 dpi A4 scans, black and
white, as TIFF (corpus.render, seed 7), in one multipart upload to bench/stack.py's stack
as `make up` runs it (one bulk worker, one extract worker), timed from the upload to
`succeeded`. A few scans go through first, untimed, so the extract worker's reading
children are started (none read: OCR is unavailable, and it stops there).

bench.procs.CpuMeter counts each process tree's CPU seconds over that window: docq's own
(the API, the extract workers with their reading children, the bulk and small-job workers)
make the figure, CPU seconds a page; Triton's, which a GPU would take over, is shown apart.
The GPU is only the divisor: the cores that keep one H200 busy are the pages/s it
classifies (H200_WINDOWS_PER_S over this run's windows a page) times those CPU seconds.

    nice -n 10 python -m bench.sizing scans --scans 200 --out bench/runs/scans-cpu-DATE.json
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.docq_jobs import post_files
from bench.sizing import Rows
from bench.stack import Stack
from client.sdk import DocqClient
from corpus.render.files import scan_form
from corpus.render.files import scans as render_scans
from docq.config import REPO_ROOT

SEED = 7  # corpus.render's, for the scans
# One H200's windows/s, Triton alone on the bench corpus's windows (the ceiling phase of
# bench/runs/pipeline-scans-h200-2026-12-03.json): the GPU these pages would feed.
H200_WINDOWS_PER_S = 1740.9
# docq's own processes, as bench.stack.Stack.meter names their trees (Triton is apart).
DOCQ_TIERS = ("api", "extract worker", "bulk worker", "priority worker")
SHOWN = (  # the table's rows: what, and the figure's key
    ("docq's CPU s a page (API, extract, bulk, small-job)", "docq_cpu_s_per_page"),
    ("  extract workers (OCR, their children included)", "extract_cpu_s_per_page"),
    ("  bulk workers", "bulk_cpu_s_per_page"),
    ("  the API", "api_cpu_s_per_page"),
    ("Triton's CPU s a page (the model on the CPU, apart)", "triton_cpu_s_per_page"),
    ("cores that keep one H200 busy with scans", "cores_per_h200"),
    ("wall s, upload to succeeded", "wall_s"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scans", type=int, default=200, help="scanned documents (about 1.2 pages)")


def figures(results: list[dict[str, Any]], wall_s: float, cpu_s: dict[str, float]) -> dict:
    """What a scans job's results and the CPU seconds of each process tree say per page."""
    read = [x for x in results if "label" in x]
    pages = sum(x.get("pages", 0) for x in read)
    windows = sum(x.get("windows", 0) for x in read)
    tier = {name: 0.0 for name in (*DOCQ_TIERS, "triton")}
    for name, seconds in cpu_s.items():
        key = next((t for t in tier if name.startswith(t)), None)
        if key is not None:
            tier[key] = round(tier[key] + seconds, 2)
    out: dict[str, Any] = {
        "documents": len(results),
        "classified": len(read),
        "failures": len(results) - len(read),
        "errors": dict(Counter(x.get("error_code", "?") for x in results if "label" not in x)),
        "read_as": dict(Counter(x.get("extraction", "?") for x in read)),
        "pages": pages,
        "windows": windows,
        "wall_s": round(wall_s, 2),
        "cpu_s": cpu_s,
        "cpu_s_by_tier": tier,
    }
    if not pages:  # nothing read: no per-page figure to divide by
        return out
    per_page = {f"{name.split()[0]}_cpu_s_per_page": s / pages for name, s in tier.items()}
    docq_s = sum(tier[name] for name in DOCQ_TIERS)
    out |= {k: round(v, 4) for k, v in per_page.items()}
    out["docq_cpu_s_per_page"] = round(docq_s / pages, 4)
    out["windows_per_page"] = round(windows / pages, 3)
    out["h200_pages_per_s"] = round(H200_WINDOWS_PER_S / out["windows_per_page"], 1)
    out["cores_per_h200"] = round(out["h200_pages_per_s"] * docq_s / pages)
    return out


def upload(http: httpx.Client, folder: Path, names: list[str], prefix: str = "") -> str:
    """One multipart upload of the scans `names` of `folder`: its job id."""
    files = [(prefix + name, (folder / name).read_bytes(), "image/tiff") for name in names]
    resp, _ = post_files(http, files)
    return str(resp.raise_for_status().json()["id"])


def run(args: argparse.Namespace, head: dict[str, Any]) -> tuple[str, Rows, dict[str, Any]]:
    """Render the scans, warm the extract workers, then time one upload of them all."""
    with tempfile.TemporaryDirectory(prefix="docq-sizing-scans-") as tmp:
        work = Path(tmp)
        form = scan_form("tiff", 300, bilevel=True)
        folder, processes = work / "scans", os.cpu_count() or 1
        names = list(render_scans(folder, args.scans, SEED, form, processes))
        with (
            Stack(REPO_ROOT / "model_repository", work, 64, extract=True, ready_s=300) as st,
            httpx.Client(base_url=st.url, headers=st.headers, timeout=300) as http,
        ):
            sdk = DocqClient(st.url, http=http)
            warm = names[: max(1, st.settings.extract_processes)]
            warm_id = upload(http, folder, warm, prefix="warm-")
            sdk.wait(warm_id, poll_s=0.5, timeout_s=600)
            if not any("label" in x for x in sdk.results(warm_id)):
                raise RuntimeError("no warm-up scan was read: is Tesseract's data there?")
            meter = st.meter()
            meter.start()
            t0 = time.monotonic()
            job_id = upload(http, folder, names)
            job = sdk.wait(job_id, poll_s=1.0, timeout_s=7200)
            wall_s = time.monotonic() - t0
            out = figures(list(sdk.results(job_id)), wall_s, meter.stop())
            reading = ("extract_processes", "read_files_at_once", "extract_ocr_threads")
            out["reading"] = {name: getattr(st.settings, name) for name in reading}
    out |= {"status": job["status"], "loadavg_1m_after": os.getloadavg()[0]}
    rows = [(what, str(out.get(key, "-"))) for what, key in SHOWN]
    counts = f"{out['documents']}, {out['pages']}, {out['failures']}"
    rows.append(("documents, pages, failures", counts))
    title = "scans: docq's CPU seconds a 300 dpi scanned page, upload to result"
    return title, rows, {**head, "seed": SEED, **out}
