"""What the blob store (issue 37, docq/blobs) changes, measured on the stack as `make up`
runs it (redis-server, tritonserver for the model catalogue, the API as its own process
from devstack/, a directory blob store); no worker runs, so every file stays queued.

1. Redis bytes per queued scanned page: `--scans` scans (the committed samples' PNG, JPEG
   and TIFF pages, in turn) in multipart uploads of 50; Redis' `used_memory` and key count
   before and after, per page, beside the pages' own bytes (what Redis held per page before
   the blob store: the file's bytes, in keys.file).
2. The API's peak RSS (VmHWM of its process) during one multipart upload of `--sizes-mb`
   of PDFs (4 MB each: a one-page text PDF padded with an incompressible stream, as a
   scan is; the same bytes under every name), each size on a fresh API process, the
   body streamed by the client in 1 MiB chunks (never held whole on either side), and the
   RSS of the same process before it.

    python -m bench.blob_store --scans 300 --sizes-mb 256,1024,2048 \\
        --out bench/runs/blob-store-cpu-2026-12-05.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis
from rich.console import Console
from rich.table import Table

from bench.extract_corpus import pdf_file
from bench.stack import settings_env, tenant_headers
from devstack import stack
from devstack.services import free_port, redis_server, stop, triton_server, wait_for
from docq.config import REPO_ROOT, Settings

SAMPLES = REPO_ROOT / "samples" / "files"
SCANS = [("scan-delivery-note-1.png", "image/png"), ("scan-receipt-1.jpg", "image/jpeg")]
SCANS.append(("scan-invoice-2.tiff", "image/tiff"))
MB = 1024 * 1024


def padded_pdf(size: int, seed: int) -> bytes:
    """A valid PDF of one text page and an image-like stream of random bytes, `size` long."""
    text = b"BT /F1 11 Tf 40 780 Td (INVOICE No. %d Total due 1,250.00 EUR) Tj ET" % seed
    pad = os.urandom(max(0, size - 900))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 "
        b"5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(pad), pad),
    ]
    return pdf_file(objects, b"%PDF-1.4\n")


@contextmanager
def api_process(settings: Settings, log: Path) -> Iterator[tuple[str, int]]:
    """The API as `make up` runs it (devstack's command line) on a free port: URL and pid."""
    port = free_port()
    env = {**settings_env(settings), "DOCQ_API_PORT": str(port)}
    with log.open("ab") as out:
        proc = subprocess.Popen(stack.api(), env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, 300, "api", proc)
        yield url, proc.pid
    finally:
        stop(proc)


def rss_kib(pid: int) -> dict[str, int]:
    """The process's resident set now (VmRSS) and at its peak so far (VmHWM), KiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}


def multipart(parts: Iterator[tuple[str, str, bytes]], boundary: str) -> Iterator[bytes]:
    """A multipart/form-data body, part by part, in chunks of at most 1 MiB."""
    for name, ctype, data in parts:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"'
            f"\r\nContent-Type: {ctype}\r\n\r\n"
        ).encode()
        for i in range(0, len(data), MB):
            yield data[i : i + MB]
        yield b"\r\n"
    yield f"--{boundary}--\r\n".encode()


def post(url: str, headers: dict[str, str], parts: Iterator[tuple[str, str, bytes]]) -> str:
    boundary = uuid.uuid4().hex
    resp = httpx.post(
        f"{url}/v1/jobs",
        content=multipart(parts, boundary),
        headers={**headers, "content-type": f"multipart/form-data; boundary={boundary}"},
        timeout=3600,
    )
    resp.raise_for_status()
    return str(resp.json()["id"])


def key_bytes(r: redis.Redis) -> int:
    """The bytes Redis counts for every key (MEMORY USAGE, values and names)."""
    return sum(r.memory_usage(k) or 0 for k in r.scan_iter(count=1000))


def redis_per_page(url: str, headers: dict[str, str], r: redis.Redis, n: int) -> dict[str, Any]:
    """Three views of what a queued page costs Redis: the bytes of the keys the uploads
    added (MEMORY USAGE), `used_memory` added over all uploads (with what does not grow with
    pages: client buffers, the keyspace's hash tables), and its slope after the first
    upload (the cost of one more page)."""
    scans = [((SAMPLES / name).read_bytes(), ctype) for name, ctype in SCANS]
    before, keys_before, kbytes_before = (
        int(r.info("memory")["used_memory"]),
        r.dbsize(),
        key_bytes(r),
    )
    page_bytes, after_first = 0, 0
    for start in range(0, n, 50):
        ids = range(start, min(n, start + 50))
        batch = [(f"p{i}.{SCANS[i % 3][0].rsplit('.', 1)[1]}", *scans[i % 3]) for i in ids]
        page_bytes += sum(len(data) for _, data, _ in batch)
        post(url, headers, ((name, ctype, data) for name, data, ctype in batch))
        if start == 0:
            after_first = int(r.info("memory")["used_memory"])
    after, keys_after = int(r.info("memory")["used_memory"]), r.dbsize()
    return {
        "pages": n,
        "uploads": -(-n // 50),
        "key_bytes_per_page": (key_bytes(r) - kbytes_before) / n,
        "redis_used_memory_added": after - before,
        "used_memory_per_page": (after - before) / n,
        "used_memory_per_page_after_first_upload": (after - after_first) / max(1, n - 50),
        "redis_keys_added": keys_after - keys_before,
        "page_bytes_mean": page_bytes / n,
    }


def peak_rss(
    settings: Settings, headers: dict[str, str], work: Path, size_mb: int
) -> dict[str, Any]:
    pdf_bytes = padded_pdf(4 * MB, 0)
    files = size_mb // 4
    own = settings.model_copy(
        update={"blob_url": (work / f"blobs-{size_mb}").as_uri(), "max_documents_per_job": 100_000}
    )
    with api_process(own, work / f"api-{size_mb}.log") as (url, pid):
        post(url, headers, iter([("warm.pdf", "application/pdf", padded_pdf(MB, 1))]))  # warm
        idle = rss_kib(pid)
        started = time.monotonic()
        post(url, headers, ((f"f{i}.pdf", "application/pdf", pdf_bytes) for i in range(files)))
        seconds = time.monotonic() - started
        after = rss_kib(pid)
    stored = sum(p.stat().st_size for p in (work / f"blobs-{size_mb}").rglob("*") if p.is_file())
    return {
        "upload_mb": size_mb,
        "files": files,
        "seconds": round(seconds, 1),
        "rss_before_upload_mib": round(idle["VmRSS"] / 1024, 1),
        "peak_rss_mib": round(after["VmHWM"] / 1024, 1),
        "blob_bytes_stored": stored,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scans", type=int, default=300)
    ap.add_argument("--sizes-mb", default="256,1024,2048")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes_mb.split(",") if s]
    report: dict[str, Any] = {"machine": os.uname().nodename, "cpus": os.cpu_count()}
    report["load_before"] = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="docq-blobs-bench-") as tmp, ExitStack() as stack_:
        work = Path(tmp)
        redis_url = stack_.enter_context(redis_server(work / "redis"))
        triton_url = stack_.enter_context(
            triton_server(REPO_ROOT / "model_repository", work / "triton.log")
        )
        settings = Settings(
            redis_url=redis_url,
            triton_grpc_url=triton_url,
            model_repository=REPO_ROOT / "model_repository",
            blob_url=(work / "blobs").as_uri(),
            max_stored_upload_bytes=(max(sizes, default=1) + 64) * MB,
        )
        headers = tenant_headers(settings)
        with api_process(settings, work / "api.log") as (url, _):
            report["scans"] = redis_per_page(
                url, headers, redis.Redis.from_url(redis_url), args.scans
            )
        report["uploads"] = [peak_rss(settings, headers, work, size) for size in sizes]
    report["load_after"] = os.getloadavg()
    args.out.write_text(json.dumps(report, indent=2) + "\n")

    table = Table(title="blob store: Redis per queued page, API peak RSS per upload size")
    for col in ("measure", "value"):
        table.add_column(col)
    s = report["scans"]
    table.add_row("Redis bytes per queued scanned page (keys)", f"{s['key_bytes_per_page']:.0f} B")
    table.add_row("  used_memory added per page", f"{s['used_memory_per_page']:.0f} B")
    table.add_row(
        "  used_memory per page after the first upload",
        f"{s['used_memory_per_page_after_first_upload']:.0f} B",
    )
    table.add_row("  (the page's own bytes, mean)", f"{s['page_bytes_mean']:.0f} B")
    table.add_row("  Redis keys added per page", f"{s['redis_keys_added'] / s['pages']:.2f}")
    for u in report["uploads"]:
        table.add_row(
            f"API peak RSS, one {u['upload_mb']} MB upload ({u['files']} PDFs, {u['seconds']} s)",
            f"{u['peak_rss_mib']} MiB (before: {u['rss_before_upload_mib']} MiB)",
        )
    Console().print(table)


if __name__ == "__main__":
    main()
