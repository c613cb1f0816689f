"""Issue 37's scenario on the local stack: one multipart upload of 63 files (57 good PDFs,
scanned PNGs and DOCX; six bad: random bytes named .pdf, a DOCX zip bomb, an empty PDF, a
truncated PDF, an encrypted PDF, a PNG declaring 100,000 x 100,000 pixels:
bench/bad_files_corpus.py), sent as a client sends it, then followed to the end.

It prints what a user sees: the answer's status and its documents accepted as failed, how
many documents were classified, each per-document error with its code (against the code
each bad kind must end with), and the worker restarts seen: Celery worker processes that
died, and extract children (docq.extract.isolation) started past the pool's first ones
(one that a bad file kills is replaced). The stack is bench/stack.py's (devstack/'s
processes on free ports, with the extract worker). Raw figures go to `--out` as JSON.

    python -m bench.bad_files --out bench/runs/bad-files-run2-cpu-2026-12-05.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from bench.bad_files_corpus import File, upload
from bench.docq_jobs import all_results, post_files, wait_job
from bench.procs import tree
from bench.stack import Stack
from devstack.services import REPO

console = Console()
# A busy shared machine can take minutes to start a Celery worker: each gets READY_S, and
# the stack is started again (never the upload: a job that times out is the run's failure).
READY_S = 300
STARTS = 2


class Children:
    """Every pid seen under the extract worker while the job runs (sampled)."""

    def __init__(self, root: int) -> None:
        self.root, self.seen, self.most = root, set(tree(root)), len(tree(root))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            now = set(tree(self.root))
            self.seen |= now
            self.most = max(self.most, len(now))

    def __enter__(self) -> Children:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def run(workdir: Path, files: list[File], timeout_s: float) -> dict[str, Any]:
    stack_at = Stack(REPO / "model_repository", workdir, 16, extract=True, ready_s=READY_S)
    with stack_at as stack:
        assert stack.extract_worker is not None
        celery = [*stack.workers, stack.extract_worker]
        pids = [w.pid for w in celery]
        http = httpx.Client(base_url=stack.url, headers=stack.headers, timeout=300)
        with Children(stack.extract_worker.pid) as children, http:
            sent = time.perf_counter()
            parts = [(f.name, f.data, f.content_type) for f in files]
            resp, accept_ms = post_files(http, parts, {"model": "doc-type"})
            accept_s, answer = accept_ms / 1000, resp.json()
            job, got, final_s = None, [], None
            if resp.status_code in (200, 202):
                job = wait_job(http, answer["id"], 0.5, timeout_s)
                final_s = round(time.perf_counter() - sent - accept_s, 1)  # polled every 0.5 s
                got = all_results(http, answer["id"])
        died = [p for w, p in zip(celery, pids, strict=True) if w.poll() is not None]
        extra_children = len(children.seen) - children.most
    return {
        "status_code": resp.status_code,
        "accept_s": round(accept_s, 3),
        "answer": answer,
        "job": job,
        "results": got,
        "celery_workers": len(celery),
        "celery_workers_died": len(died),
        "extract_children_seen": len(children.seen) - 1,
        "extract_children_replaced": max(0, extra_children),
        "final_after_202_s": final_s,
    }


def report(files: list[File], raw: dict[str, Any]) -> dict[str, Any]:
    by_id = {r["id"]: r for r in raw["results"]}
    expected = {f.name: f.code for f in files if f.code}
    labels = {f.name: f.label for f in files if f.label}
    classified = [k for k, r in by_id.items() if "label" in r]
    errors = {k: r.get("error_code") for k, r in by_id.items() if "label" not in r}
    at_upload = {f["id"]: f["error_code"] for f in raw["answer"].get("failed", [])}
    summary = {
        "answer": raw["status_code"],
        "documents": len(files),
        "accepted_as_failed_at_upload": len(at_upload),
        "classified": len(classified),
        "correct_labels": sum(1 for k in classified if by_id[k]["label"] == labels.get(k)),
        "per_document_errors": len(errors),
        "errors_as_expected": errors == expected,
        "worker_restarts": raw["celery_workers_died"],
        "extract_children_replaced": raw["extract_children_replaced"],
        "job_status": (raw["job"] or {}).get("status"),
    }
    table = Table("measure", "value", title="63-file multipart upload, 6 bad files")
    for k, v in summary.items():
        table.add_row(k.replace("_", " "), str(v))
    table.add_row("202 after (s)", f"{raw['accept_s']:.2f}")
    table.add_row("job final after the 202 (s)", str(raw["final_after_202_s"]))
    console.print(table)
    codes = Table("bad file", "found", "error_code", "expected", "message", title="per document")
    for name, code in expected.items():
        where = "upload" if name in at_upload else "worker"
        message = (by_id.get(name) or {}).get("error") or ""
        codes.add_row(name, where, str(errors.get(name)), code, message[:60])
    for name in sorted(set(errors) - set(expected)):  # a good file that failed
        codes.add_row(name, "worker", str(errors[name]), "(a label)", by_id[name].get("error", ""))
    console.print(codes)
    return summary


def cached(where: Path | None, seed: int) -> list[File]:
    """The upload's files, made once (scans take a minute to draw) and kept in `where`."""
    index = where / f"files-{seed}.json" if where else None
    if index is not None and index.exists():
        kept = json.loads(index.read_text())
        return [File(**{**f, "data": (where / str(n)).read_bytes()}) for n, f in enumerate(kept)]
    files = upload(seed)
    if index is not None and where is not None:
        where.mkdir(parents=True, exist_ok=True)
        for n, f in enumerate(files):
            (where / str(n)).write_bytes(f.data)
        meta = [{"name": f.name, "content_type": f.content_type, "label": f.label, "code": f.code}
                for f in files]  # fmt: skip
        index.write_text(json.dumps(meta))
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--timeout", type=float, default=540.0, help="seconds to wait for the job")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=None, help="keep the 63 files here (a rerun)")
    args = ap.parse_args()
    started = time.perf_counter()
    files = cached(args.cache, args.seed)
    made_s = time.perf_counter() - started
    load_before = os.getloadavg()  # the machine is shared: say how busy it was
    for attempt in range(1, STARTS + 1):
        workdir = Path(tempfile.mkdtemp(prefix="docq-bad-files-"))  # its logs stay for a look
        console.print(f"stack logs: {workdir}")
        try:
            raw = run(workdir, files, args.timeout)
            break
        except (TimeoutError, RuntimeError) as exc:  # a process not ready: the stack's start
            if attempt == STARTS or "job" in str(exc):
                raise
            console.print(f"the stack did not start ({exc}); starting it again")
    summary = report(files, raw)
    day = dt.datetime.now(dt.UTC).date().isoformat()
    out = args.out or Path(f"bench/runs/bad-files-cpu-{day}.json")
    record = {
        "command": f"python -m bench.bad_files --out {out}",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"node": platform.node(), "cpus": os.cpu_count(), "load": load_before},
        "files": [
            {
                "name": f.name,
                "type": f.content_type,
                "bytes": len(f.data),
                "label": f.label,
                "expected_code": f.code,
            }
            for f in files
        ],
        "corpus_made_s": round(made_s, 1),
        "summary": summary,
        "raw": raw,
    }
    out.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    console.print(f"raw figures: {out}")


if __name__ == "__main__":
    main()
