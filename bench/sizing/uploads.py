"""What uploaded files cost while they wait (issue 37, docq/blobs), on bench/stack.py's stack
as `make up` runs it (redis-server, tritonserver for the model catalogue, the API as its
own process, a directory blob store) with no extract worker, so every file stays queued.

1. Redis bytes per queued scanned page: `--scans` scans (the committed samples' PNG, JPEG
   and TIFF pages, in turn) in multipart uploads of 50; Redis' key bytes and key count
   before and after, per page, beside the pages' own bytes (what Redis held per page before
   the blob store: the file's bytes, in keys.file).
2. The API's peak RSS (VmHWM of its process) during one multipart upload of `--sizes-mb`
   of PDFs (4 MB each: a one-page PDF with a scan of incompressible noise; the same bytes
   under every name), each size on a fresh API process, the body streamed by the client
   part by part (bench.docq_jobs.post_files; never held whole on either side), and the RSS
   of the same process before it.

    python -m bench.sizing uploads --scans 1000 --sizes-mb 256,1024,2048 \\
        --out bench/runs/blob-store-cpu-DATE.json
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

import httpx
import redis
from fpdf import FPDF
from PIL import Image

from bench.docq_jobs import post_files
from bench.procs import listener
from bench.sizing import Rows, key_bytes
from bench.stack import Stack
from devstack.services import api_server
from docq.config import REPO_ROOT

SAMPLES = REPO_ROOT / "samples" / "files"
SCANS = [("scan-delivery-note-1.png", "image/png"), ("scan-receipt-1.jpg", "image/jpeg")]
SCANS.append(("scan-invoice-2.tiff", "image/tiff"))
MB = 1024 * 1024
BATCH = 50  # scans an upload


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scans", type=int, default=300)
    p.add_argument("--sizes-mb", default="256,1024,2048", help="one upload of each size")


def scanned_pdf(size: int) -> bytes:
    """A valid one-page PDF of about `size` bytes: a line of text and a grey image of random
    pixels, which no compression shrinks (as a scan's noise barely shrinks)."""
    side = int(size**0.5)
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.cell(text="INVOICE No. 4711 Total due 1,250.00 EUR")
    pdf.image(Image.frombytes("L", (side, side), os.urandom(side * side)), x=10, y=30, w=190)
    return bytes(pdf.output())


def rss_kib(pid: int) -> dict[str, int]:
    """The process's resident set now (VmRSS) and at its peak so far (VmHWM), KiB."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in status)
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}


def per_page(st: Stack, n: int) -> dict[str, Any]:
    """What a queued page costs Redis: the bytes of the keys the uploads added (MEMORY
    USAGE), and how many keys."""
    r = redis.Redis.from_url(st.settings.redis_url)
    scans = [((SAMPLES / name).read_bytes(), ctype) for name, ctype in SCANS]
    keys_before, kbytes_before = r.dbsize(), key_bytes(r)
    page_bytes = 0
    with httpx.Client(base_url=st.url, headers=st.headers, timeout=3600) as http:
        for start in range(0, n, BATCH):
            ids = range(start, min(n, start + BATCH))
            batch = [(f"p{i}.{SCANS[i % 3][0].rsplit('.', 1)[1]}", *scans[i % 3]) for i in ids]
            page_bytes += sum(len(data) for _, data, _ in batch)
            post_files(http, batch)[0].raise_for_status()
    return {
        "pages": n,
        "uploads": -(-n // BATCH),
        "key_bytes_per_page": (key_bytes(r) - kbytes_before) / n,
        "redis_keys_added": r.dbsize() - keys_before,
        "page_bytes_mean": page_bytes / n,
    }


def peak_rss(st: Stack, work: Path, size_mb: int) -> dict[str, Any]:
    """A fresh API's RSS before and at its peak during one upload of `size_mb` of PDFs."""
    pdf_bytes, files, blobs = scanned_pdf(4 * MB), size_mb // 4, work / f"blobs-{size_mb}"
    env = {**st.env, "DOCQ_BLOB_URL": blobs.as_uri()}
    env["DOCQ_MAX_STORED_UPLOAD_BYTES"] = str((size_mb + 64) * MB)
    # a fresh API each size (so its peak is that upload's), given 300 s on a busy machine
    with (
        api_server(env, work / f"api-{size_mb}.log", ready_s=300) as url,
        httpx.Client(base_url=url, headers=st.headers, timeout=3600) as http,
    ):
        pid = listener(int(url.rsplit(":", 1)[1]))
        post_files(http, [("warm.pdf", scanned_pdf(MB), "application/pdf")])[0].raise_for_status()
        idle = rss_kib(pid)
        pdfs = [(f"f{i}.pdf", pdf_bytes, "application/pdf") for i in range(files)]
        resp, ms = post_files(http, pdfs)
        resp.raise_for_status()
        after = rss_kib(pid)
    return {
        "upload_mb": size_mb,
        "files": files,
        "seconds": round(ms / 1000, 1),
        "rss_before_upload_mib": round(idle["VmRSS"] / 1024, 1),
        "peak_rss_mib": round(after["VmHWM"] / 1024, 1),
        "blob_bytes_stored": sum(p.stat().st_size for p in blobs.rglob("*") if p.is_file()),
    }


def run(args: argparse.Namespace, head: dict[str, Any]) -> tuple[str, Rows, dict[str, Any]]:
    """Both measures on one stack: the table's title, its rows and the run's figures."""
    sizes = [int(s) for s in args.sizes_mb.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="docq-sizing-uploads-") as tmp:
        work = Path(tmp)
        os.environ["DOCQ_BLOB_URL"] = (work / "blobs").as_uri()  # read by the stack's Settings
        with Stack(REPO_ROOT / "model_repository", work, 64, bulk_workers=0, ready_s=300) as st:
            scans = per_page(st, args.scans)
            uploads = [peak_rss(st, work, size) for size in sizes]
    keys_per_page = scans["redis_keys_added"] / scans["pages"]
    rows = [
        ("Redis bytes per queued scanned page (keys)", f"{scans['key_bytes_per_page']:.0f} B"),
        ("  (the page's own bytes, mean)", f"{scans['page_bytes_mean']:.0f} B"),
        ("  Redis keys added per page", f"{keys_per_page:.2f}"),
    ]
    for u in uploads:
        what = f"API peak RSS, one {u['upload_mb']} MB upload ({u['files']} PDFs, {u['seconds']} s)"
        rows.append((what, f"{u['peak_rss_mib']} MiB (before: {u['rss_before_upload_mib']} MiB)"))
    title = "uploads: Redis per queued page, API peak RSS per upload size"
    return title, rows, {**head, "scans": scans, "uploads": uploads}
