"""How fast the API accepts file uploads (issue 21): the time from sending an upload of one
1 MB PDF to its 202, over 200 uploads, on the stack as `make up` runs it (redis-server with
its append-only file fsynced at every write, tritonserver for the model catalogue, the API
as its own process). No worker runs: acceptance is the API's and Redis's work alone, and a
file is only sniffed, capped and stored (the API never parses it).

Two forms: a multipart part (`files`), and a JSON document with base64 `content`. Each
PDF is a one-page text PDF padded with an incompressible stream to its size, as a scan is
(a distinct file each upload). Bodies are built before timing: the client's own encoding
is not the API's latency.

Last, `--batches` uploads of all `--uploads` PDFs at once (one 200 MB multipart body: its
p90/p99 columns are its max).

    python -m bench.upload_files --uploads 200 --size-mb 1 --out bench/upload-files.json
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.stack import settings_env, tenant_headers
from devstack.services import REPO, api_server, redis_server, triton_server
from docq.config import Settings
from docq.store.connection import connect


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
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def bodies(form: str, n: int, size: int, per_upload: int = 1) -> list[tuple[bytes, str]]:
    """(body, content type) of n uploads of `per_upload` PDFs each, built ahead of timing."""
    out = []
    for i in range(n):
        if form == "multipart-batch":
            files = [
                ("files", (f"scan-{i}-{k}.pdf", padded_pdf(size, k), "application/pdf"))
                for k in range(per_upload)
            ]
            req = httpx.Request("POST", "http://x/v1/jobs", files=files)
            out.append((req.read(), req.headers["content-type"]))
            continue
        pdf = padded_pdf(size, i)
        if form == "multipart":
            files = [("files", (f"scan-{i}.pdf", pdf, "application/pdf"))]
            req = httpx.Request("POST", "http://x/v1/jobs", files=files)
        else:
            doc = {"id": f"scan-{i}.pdf", "content": base64.b64encode(pdf).decode()}
            doc["content_type"] = "application/pdf"
            req = httpx.Request("POST", "http://x/v1/jobs", json={"documents": [doc]})
        out.append((req.read(), req.headers["content-type"]))
    return out


def run(
    url: str, headers: dict[str, str], todo: list[tuple[bytes, str]], clients: int
) -> list[float]:
    """Milliseconds from sending each upload to its 202."""

    def one(client: httpx.Client, body: bytes, ctype: str) -> float:
        t = time.perf_counter()
        resp = client.post("/v1/jobs", content=body, headers={"content-type": ctype})
        ms = (time.perf_counter() - t) * 1000
        if resp.status_code != 202:
            raise RuntimeError(f"upload answered {resp.status_code}: {resp.text[:300]}")
        return ms

    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        one(client, *todo[0])  # a first upload warms the catalogue cache and the pool
        with ThreadPoolExecutor(clients) as pool:
            return list(pool.map(lambda b: one(client, *b), todo[1:] + todo[:1]))


def quantile(ms: list[float], q: float) -> float:
    return (
        statistics.quantiles(ms, n=100, method="inclusive")[int(q * 100) - 1] if q < 1 else max(ms)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uploads", type=int, default=200)
    ap.add_argument("--size-mb", type=float, default=1.0)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--batches", type=int, default=3, help="uploads of --uploads PDFs at once")
    ap.add_argument("--out", type=Path, default=Path("bench/upload-files.json"))
    args = ap.parse_args()
    size = int(args.size_mb * 1024 * 1024)
    rows: list[dict[str, Any]] = []
    load_before = os.getloadavg()  # the machine is shared: say how busy it was
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with (
            redis_server(work / "redis") as redis_url,
            triton_server(REPO / "model_repository", work / "triton.log") as triton_url,
        ):
            # 200 jobs at once from one tenant: above the default tenant limits on purpose
            s = Settings(
                redis_url=redis_url,
                triton_grpc_url=triton_url,
                tenant_max_active_jobs=100_000,
                tenant_max_queued_documents=1_000_000,
            )
            with api_server(settings_env(s), work / "api.log") as url:
                r = connect(redis_url)
                for form in ("multipart", "json-base64"):
                    for clients in args.clients:
                        r.flushdb()
                        headers = tenant_headers(s)
                        todo = bodies(form, args.uploads, size)
                        ms = run(url, headers, todo, clients)
                        used = int(r.info("memory")["used_memory"])
                        rows.append(
                            {
                                "form": form,
                                "clients": clients,
                                "uploads": len(ms),
                                "pdf_bytes": len(padded_pdf(size, 0)),
                                "body_bytes": len(todo[0][0]),
                                "p50_ms": round(statistics.median(ms), 1),
                                "p90_ms": round(quantile(ms, 0.90), 1),
                                "p99_ms": round(quantile(ms, 0.99), 1),
                                "max_ms": round(max(ms), 1),
                                "redis_used_mb": round(used / 2**20, 1),
                            }
                        )
                        print(f"{form} x{clients}: done", flush=True)
                if args.batches:  # the same PDFs, all in one upload (a client's folder)
                    ms = []
                    for _ in range(args.batches):
                        r.flushdb()
                        headers = tenant_headers(s)
                        todo = bodies("multipart-batch", 1, size, args.uploads)
                        t = time.perf_counter()
                        resp = httpx.post(
                            f"{url}/v1/jobs",
                            content=todo[0][0],
                            headers={**headers, "content-type": todo[0][1]},
                            timeout=300,
                        )
                        ms.append((time.perf_counter() - t) * 1000)
                        if resp.status_code != 202:
                            raise RuntimeError(f"{resp.status_code}: {resp.text[:300]}")
                    rows.append(
                        {
                            "form": f"multipart, {args.uploads} PDFs in one upload",
                            "clients": 1,
                            "uploads": len(ms),
                            "pdf_bytes": len(padded_pdf(size, 0)),
                            "body_bytes": len(todo[0][0]),
                            "p50_ms": round(statistics.median(ms), 1),
                            "p90_ms": round(max(ms), 1),
                            "p99_ms": round(max(ms), 1),
                            "max_ms": round(max(ms), 1),
                            "redis_used_mb": round(int(r.info("memory")["used_memory"]) / 2**20, 1),
                        }
                    )
    report = {
        "what": "upload of one PDF answered 202 (no workers), make-up's redis (fsync always)",
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "rows": rows,
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    cols = ("clients", "uploads", "p50 ms", "p90 ms", "p99 ms", "max ms", "redis MB")
    print(f"{'form':<12} " + " ".join(f"{c:>8}" for c in cols))
    for row in rows:
        print(
            f"{row['form']:<12} {row['clients']:>8} {row['uploads']:>8} {row['p50_ms']:>8} "
            f"{row['p90_ms']:>8} {row['p99_ms']:>8} {row['max_ms']:>8} {row['redis_used_mb']:>8}"
        )


if __name__ == "__main__":
    main()
