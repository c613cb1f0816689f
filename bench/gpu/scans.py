"""The GPU bench's scans phase (issue 21): scanned pages uploaded as files, OCR'd by the
extract workers and classified on the GPU; how many extraction cores keep one GPU busy.

The pages are 300 dpi A4 scans, black and white, as TIFF (`bench.gpu.pack --profile scans`
renders them with corpus.render into .devpack/scans/, with their labels.json), each file
uploaded `repeat` times under names of its own (r0-…, r1-…: OCR reads every copy afresh,
docq keeps no cache of files) in one multipart upload, timed from the upload to
`succeeded` as the text phase is (bench.docq_jobs). Before it, a few of the files go
through untimed, so each extract worker's reading children are started and hold an engine
(and where none of them is read, OCR is unavailable: the phase stops there and says why).

How many pages are read at once is docq's own: an upload of N files is ceil(N / shard_size)
shards, an extract worker reads EXTRACT_THREADS shards at once, each shard
DOCQ_READ_FILES_AT_ONCE files, in the worker's DOCQ_EXTRACT_PROCESSES children. The JSON
records all of them beside the figures:

- docs/s and pages/s end to end, the windows the pages made, GPU utilisation;
- the extract workers' CPU seconds per page (bench.procs.CpuMeter over each worker's process
  tree, its reading children included), so pages per core-second;
- `cores_needed`: the extraction cores that would keep the GPU as busy as the same run's
  Triton alone kept it (the ceiling phase's windows/s, else the text phase's docq windows/s),
  `gpu windows/s / windows per page * core-seconds per page`. Its windows are the text
  corpus's (2 per document, most of them full); a page's OCR'd text may make shorter ones,
  which the unpadded engines compute faster, so it leans low. `cores_needed_by_gpu_time`
  divides instead by the GPU time Triton spent on these very pages (its compute counter):
  their own window lengths, but in the small batches of a GPU that few cores feed, which
  cost more per window than full ones, so it leans low too. Each is a lower bound; the
  larger is the better one.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.docq_jobs import all_results, post_files, wait_job
from bench.gpu.measure import GpuSampler, stats_delta, tiers, triton_stats
from bench.gpu.model import MODEL
from bench.stack import Stack
from devstack.stack import EXTRACT_THREADS

File = tuple[str, bytes, str]  # (name, bytes, content type), as httpx's `files` takes them


def load_scans(folder: Path, docs: int | None = None, repeat: int = 1) -> list[File]:
    """The first `docs` scans of `folder` (labels.json's order), each `repeat` times."""
    labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    names = list(labels)[:docs]
    scans = [(name, (folder / name).read_bytes()) for name in names]
    return [(f"r{k}-{name}", data, "image/tiff") for k in range(repeat) for name, data in scans]


def upload(http: httpx.Client, files: list[File]) -> tuple[str, float]:
    """One multipart upload of `files` (the model is the stack's default): job id, ms to 202."""
    resp, ms = post_files(http, files)
    return resp.raise_for_status().json()["id"], ms


def cores_needed(
    gpu_windows_per_s: float, windows_per_page: float, core_s_per_page: float
) -> float:
    """Extraction cores that feed the GPU its `gpu_windows_per_s`: the pages/s it classifies
    (each page makes `windows_per_page` windows) times each page's CPU seconds of reading."""
    return gpu_windows_per_s / windows_per_page * core_s_per_page


def gpu_capacity(r: dict[str, Any]) -> tuple[float, str] | None:
    """The GPU's windows/s measured in the same run, and where from: Triton alone (the
    ceiling phase), else docq's text phase (a lower bound on what the GPU can take)."""
    ceiling, text = r.get("ceiling") or {}, r.get("docq") or {}
    if ceiling.get("elapsed_s"):
        return ceiling["windows"] / ceiling["elapsed_s"], "ceiling (Triton alone)"
    if text.get("windows_per_s"):
        return text["windows_per_s"], "docq text phase"
    return None


def read_figures(results: list[dict[str, Any]], elapsed: float, cpu_s: dict[str, float]) -> dict:
    """What a scans job's results and its CPU seconds per tier say per page."""
    read = [x for x in results if "label" in x]
    pages = sum(x.get("pages", 0) for x in read)
    windows = sum(x.get("windows", 0) for x in read)
    tier = tiers(cpu_s)
    extract_s = tier.get("extract workers", 0.0)
    out: dict[str, Any] = {
        "documents": len(results),
        "classified": len(read),
        "failures": len(results) - len(read),
        "errors": dict(Counter(x.get("error_code", "?") for x in results if "label" not in x)),
        "read_as": dict(Counter(x.get("extraction", "?") for x in read)),
        "pages": pages,
        "pages_per_doc": round(pages / max(len(read), 1), 3),
        "windows": windows,
        "windows_per_page": round(windows / pages, 3) if pages else None,
        "elapsed_s": round(elapsed, 2),
        "docs_per_s": round(len(results) / elapsed, 3),
        "pages_per_s": round(pages / elapsed, 3),
        "cpu_s": cpu_s | {"tiers": tier},
        "extract_cores_busy": round(extract_s / elapsed, 2),
    }
    if pages and extract_s:
        out["extract_cpu_s_per_page"] = round(extract_s / pages, 4)
        out["pages_per_core_s"] = round(pages / extract_s, 3)
        out["bulk_cpu_ms_per_page"] = round(1000 * tier.get("bulk workers", 0.0) / pages, 2)
    return out


def add_cores_needed(out: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    """`out` with cores_needed from the same run's GPU capacity (when both are known)."""
    capacity = gpu_capacity(r)
    if capacity is None or not out.get("extract_cpu_s_per_page") or not out["windows_per_page"]:
        return out
    windows_s, source = capacity
    out["gpu_windows_per_s"] = round(windows_s, 1)
    out["gpu_capacity_from"] = source
    out["gpu_pages_per_s"] = round(windows_s / out["windows_per_page"], 1)
    cores = cores_needed(windows_s, out["windows_per_page"], out["extract_cpu_s_per_page"])
    out["cores_needed"] = round(cores, 1)
    compute_s = (out.get("triton") or {}).get("compute_s")
    if compute_s:  # the same from the GPU time these very pages took (their own batches)
        gpu_s_per_page = compute_s / out["pages"]
        out["gpu_compute_ms_per_page"] = round(1000 * gpu_s_per_page, 3)
        out["cores_needed_by_gpu_time"] = round(out["extract_cpu_s_per_page"] / gpu_s_per_page, 1)
    return out


def run_scans(
    stack: Stack,
    folder: Path,
    docs: int | None,
    repeat: int,
    extract_workers: int,
    sampler: GpuSampler,
    r: dict[str, Any],
) -> dict[str, Any]:
    """The scans phase: start the extract workers, warm them, then one timed upload."""
    files = load_scans(folder, docs, repeat)
    if stack.extract_workers < extract_workers:
        stack.add_extract_workers(extract_workers - stack.extract_workers)
    s = stack.settings
    http = httpx.Client(base_url=stack.url, headers=stack.headers, timeout=300)
    warm = files[: max(1, stack.extract_workers * s.extract_processes)]
    warm_id, _ = upload(http, [(f"warm-{n}", data, ctype) for n, data, ctype in warm])
    warm_job = wait_job(http, warm_id, 0.25)
    warm_read = all_results(http, warm_id)
    if not any("label" in x for x in warm_read):  # OCR unavailable there: nothing to time
        codes = Counter(x.get("error_code") for x in warm_read)
        raise RuntimeError(f"no warm-up scan was read ({dict(codes)}): is tessdata there?")
    meter = stack.meter()
    triton_before = triton_stats(stack.triton_url, MODEL)
    meter.start()
    t0 = time.monotonic()
    job_id, accept_ms = upload(http, files)
    job = wait_job(http, job_id, 0.25)
    t1 = time.monotonic()
    cpu_s = meter.stop()
    out = read_figures(all_results(http, job_id), t1 - t0, cpu_s)
    http.close()
    out |= {
        "status": job["status"],
        "warm_up": {"files": len(warm), "status": warm_job["status"]},
        "distinct_files": len(files) // repeat,
        "repeat": repeat,
        "upload_mib": round(sum(len(f[1]) for f in files) / 2**20, 2),
        "accept_ms": round(accept_ms, 1),
        "gpu": sampler.window(t0, t1),
        "triton": stats_delta(triton_before, triton_stats(stack.triton_url, MODEL)),
        "reading": {
            "extract_workers": stack.extract_workers,
            "shards": -(-len(files) // s.shard_size),
            "shards_per_worker_at_once": EXTRACT_THREADS,
            "files_per_shard_at_once": s.read_files_at_once,
            "children_per_worker": s.extract_processes,
            "ocr_threads": s.extract_ocr_threads,
            "tessdata": s.extract_tessdata_dir or "Debian's places",
        },
    }
    return add_cores_needed(out, r)
