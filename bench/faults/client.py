"""The fleet's client, run inside the `client` host: what a client application sees, and
nothing else, written down for the checker (check.py).

It uploads a job every `every_s` seconds at a steady rate, each from a thread of its own
(an upload that waits does not hold back the next), with an Idempotency-Key, most with a
webhook to its own receiver; an attempt that is refused, times out or is answered 409, 429
or 5xx is tried again with the same key, until a 202 or the give-up time. Every attempt is
a line of attempts.jsonl; every delivery the receiver verifies (Standard Webhooks) a line
of deliveries.jsonl; each job's first seen final state, and then its results, a line of
jobs.jsonl. `python -m bench.fleet.client --help`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.webhooks import VerifyingReceiver
from corpus.doc_type import generate

SECRET = "whsec_" + "ZmxlZXQtZmxlZXQtZmxlZXQtZmxlZXQtZmxlZXQtMTI="
RETRY = {409, 429, 500, 502, 503, 504}
ATTEMPT_TIMEOUT_S = 30.0  # an answer later than this is a hang (the checker counts them)
FINAL = {"succeeded", "failed", "cancelled"}
CORPUS_SEED = 41
PATIENCE_S = 120.0  # how long one upload is tried again before the client gives it up


def corpus(n: int, seed: int) -> list[dict[str, str]]:
    """One-window documents (the first 300 characters): a run is CPU-sized."""
    return [{"id": d.id, "text": d.text[:300]} for d in generate(n, seed=seed)]


class Log:
    """An append-only JSON-lines file, written from many threads."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("a", buffering=1)
        self.lock = threading.Lock()

    def write(self, **record: Any) -> None:
        with self.lock:
            self.file.write(json.dumps(record) + "\n")


class Client:
    """Uploads, follows and reads back jobs, logging what it saw."""

    def __init__(self, api: str, key: str, out: Path) -> None:
        self.http = httpx.Client(
            base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=ATTEMPT_TIMEOUT_S
        )
        self.attempts = Log(out / "attempts.jsonl")
        self.jobs = Log(out / "jobs.jsonl")
        self.accepted: dict[str, str] = {}  # job id -> Idempotency-Key
        self.patience_s = PATIENCE_S
        self.lock = threading.Lock()

    def upload(self, key: str, body: dict[str, Any], give_up_at: float) -> str | None:
        """The job id of the first 202 (or 200: a replay) for `key`, else None (a final
        refusal, or no 202 within the client's patience)."""
        give_up_at = min(give_up_at, time.time() + self.patience_s)
        while time.time() < give_up_at:
            sent = time.time()
            record: dict[str, Any] = {
                "key": key,
                "sent": sent,
                "documents": len(body["documents"]),
                "webhook": "webhook" in body,
            }
            try:
                r = self.http.post("/v1/jobs", json=body, headers={"Idempotency-Key": key})
                record.update(status=r.status_code, answered=time.time())
                try:
                    payload = r.json()
                    record["json"] = True
                    record["code"] = (payload.get("error") or {}).get("code")
                except ValueError:
                    payload, record["json"] = {}, False
                if r.status_code in (200, 202):
                    record["job"] = payload["id"]
                    self.attempts.write(**record)
                    with self.lock:
                        self.accepted[payload["id"]] = key
                    return str(payload["id"])
                self.attempts.write(**record)
                if r.status_code not in RETRY:
                    return None
            except httpx.TransportError as e:
                record.update(error=type(e).__name__, answered=time.time())
                self.attempts.write(**record)
            time.sleep(1.0)
        return None

    def follow(self, stop: threading.Event) -> None:
        """Poll every accepted job not yet seen final, once a second; log when it is."""
        seen: set[str] = set()
        while not stop.wait(1.0):
            with self.lock:
                pending = [j for j in self.accepted if j not in seen]
            for job in pending:
                try:
                    status = self.http.get(f"/v1/jobs/{job}").json()
                except (httpx.HTTPError, ValueError):
                    continue
                if status.get("status") in FINAL:
                    seen.add(job)
                    self.jobs.write(job=job, final_seen=time.time(), status=status["status"])

    def results(self, job: str) -> list[dict[str, Any]]:
        """Every result of `job`, through the paged results API."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": 1000}
            if cursor:
                params["cursor"] = cursor
            page = self.http.get(f"/v1/jobs/{job}/results", params=params).json()
            out += [
                {"id": r["id"], "label": r.get("label"), "error": r.get("error")}
                for r in page["data"]
            ]
            cursor = page.get("next_cursor")
            if not cursor:
                return out


def reference(client: Client, docs: list[dict[str, str]], out: Path, timeout_s: float) -> None:
    """The fault-free run: every document in one job; its labels to reference.json."""
    job = client.upload("reference", {"documents": docs}, time.time() + timeout_s)
    if job is None:
        sys.exit("client: the reference upload was not accepted")
    deadline = time.time() + timeout_s
    while client.http.get(f"/v1/jobs/{job}").json()["status"] not in FINAL:
        if time.time() > deadline:
            sys.exit(f"client: the reference job {job} was not final after {timeout_s:g} s")
        time.sleep(1)
    labels = {r["id"]: r["label"] for r in client.results(job)}
    (out / "reference.json").write_text(json.dumps(labels))


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    docs = corpus(args.documents, CORPUS_SEED)  # the same for every run: one reference
    rng = random.Random(args.seed)
    client = Client(args.api, args.key, out)
    if args.reference:
        reference(client, docs, out, args.settle_s)
        return
    deliveries = Log(out / "deliveries.jsonl")
    receiver = VerifyingReceiver(SECRET, record=lambda r: deliveries.write(at=time.time(), **r))
    with receiver.serve(args.address, "/hooks/fleet") as hook_url:
        hook = {"url": hook_url, "secret": SECRET}
        stop = threading.Event()
        follower = threading.Thread(target=client.follow, args=(stop,), daemon=True)
        follower.start()
        started = time.time()
        give_up_at = started + args.seconds + args.settle_s
        threads = []
        i = 0
        while time.time() < started + args.seconds:
            size = args.bulk if rng.random() < args.bulk_share else rng.randint(2, 6)
            body: dict[str, Any] = {"documents": rng.sample(docs, min(size, len(docs)))}
            if rng.random() < args.webhook_share:
                body["webhook"] = hook
            t = threading.Thread(
                target=client.upload, args=(f"{args.run}-{i}", body, give_up_at), daemon=True
            )
            t.start()
            threads.append(t)
            i += 1
            time.sleep(max(0.0, started + i * args.every_s - time.time()))
        for t in threads:
            t.join(max(0.0, give_up_at - time.time()) + ATTEMPT_TIMEOUT_S)
        # every accepted job final, or the settle time over
        while time.time() < give_up_at:
            done = {
                json.loads(line)["job"] for line in (out / "jobs.jsonl").read_text().splitlines()
            }
            if set(client.accepted) <= done:
                break
            time.sleep(1)
        stop.set()
        follower.join(30)
        for job, key in sorted(client.accepted.items()):
            try:
                client.jobs.write(job=job, key=key, results=client.results(job))
            except (httpx.HTTPError, ValueError, KeyError) as e:
                client.jobs.write(job=job, key=key, results_error=repr(e))
        time.sleep(args.linger_s)  # the last deliveries (and any duplicate) arrive meanwhile
    print(f"client: {i} uploads, {len(client.accepted)} accepted", file=sys.stderr)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.fleet.client")
    p.add_argument("--api", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--address", required=True, help="the client host's own address")
    p.add_argument("--out", required=True)
    p.add_argument("--run", default="run", help="prefix of the Idempotency-Keys")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--settle-s", type=float, default=180, help="after the uploads: the wait")
    p.add_argument("--linger-s", type=float, default=5)
    p.add_argument("--every-s", type=float, default=2.0)
    p.add_argument("--documents", type=int, default=120)
    p.add_argument("--bulk", type=int, default=48, help="documents of a bulk job")
    p.add_argument("--bulk-share", type=float, default=0.1)
    p.add_argument("--webhook-share", type=float, default=0.75)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reference", action="store_true", help="the fault-free run alone")
    run(p.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
