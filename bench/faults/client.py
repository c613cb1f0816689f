"""The client of the fault runs (the fleet's, inside its `client` host, and the chaos run's):
what a client application sees, and nothing else, written down for the checker (check.py).

An upload carries an Idempotency-Key; an attempt that is refused, times out or is answered
409, 429 or 5xx is tried again with the same key, until a 202 or the client's patience runs
out. Every attempt is a line of attempts.jsonl; every delivery its webhook receiver verifies
(Standard Webhooks, through docq's client: client/webhooks.py) a line of deliveries.jsonl;
each job's first seen final state, and then its results (read through client/sdk.py), a
line of jobs.jsonl. The fleet runs `uploads` in its client host as `python -m
bench.faults.client CONFIG`, CONFIG its arguments as a JSON object: a job every 2 s, each
from a thread of its own (an upload that waits does not hold back the next), most with a
webhook.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from client.errors import ClientError, InvalidSignature
from client.sdk import DocqClient
from client.webhooks import verify_webhook
from corpus.doc_type import generate

SECRET = "whsec_" + "ZmxlZXQtZmxlZXQtZmxlZXQtZmxlZXQtZmxlZXQtMTI="
# Answers that say "try again": the store or broker down, the API over its limits, the
# first upload with the same Idempotency-Key still being stored.
RETRY = {409, 429, 500, 502, 503, 504}
ATTEMPT_TIMEOUT_S = 30.0  # an answer later than this is a hang (the checker counts them)
FINAL = {"succeeded", "failed", "cancelled"}
CORPUS_SEED = 41
DOCUMENTS = 120  # the corpus the fleet's jobs draw from
PATIENCE_S = 120.0  # how long one upload is tried again before the client gives it up


def corpus(n: int = DOCUMENTS, seed: int = CORPUS_SEED) -> list[dict[str, str]]:
    """One-window documents (the first 300 characters): a run is CPU-sized."""
    return [{"id": d.id, "text": d.text[:300]} for d in generate(n, seed=seed)]


class VerifyingReceiver:
    """Accepts (200) verified deliveries, refuses (503) a seeded share of them (the chaos
    run's: retries while processes die), and answers 401 to any whose signature does not
    verify. `record` is called with what each accepted delivery said, and with
    `bad_signature` for each refused as forged."""

    def __init__(
        self,
        record: Callable[..., None],
        secret: str = SECRET,
        refuse_share: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.secret, self.record = secret, record
        self.refuse_share, self.rng = refuse_share, random.Random(seed)
        self.refused = 0
        self.lock = threading.Lock()

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        try:
            event = verify_webhook(body, headers, self.secret)
        except InvalidSignature:
            self.record(bad_signature=True)
            return 401
        with self.lock:
            if self.rng.random() < self.refuse_share:
                self.refused += 1
                return 503
        data = event["data"]
        self.record(
            webhook_id=headers["webhook-id"],
            type=event["type"],
            job=data["id"],
            status=data["status"],
            done=data.get("progress", {}).get("documents_done"),
        )
        return 200

    @contextmanager
    def serve(self, address: str = "127.0.0.1", path: str = "/hooks/fleet") -> Iterator[str]:
        """Listen on a free port of `address`; yields the URL to give jobs."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                code = receiver.handle({k.lower(): v for k, v in self.headers.items()}, body)
                self.send_response(code)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer((address, 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://{address}:{server.server_address[1]}{path}"
        finally:
            server.shutdown()
            server.server_close()


class Client:
    """Uploads, follows (in a thread, once `follow` is started) and reads back jobs, logging
    what it saw; `receiver` writes what it verifies to the same folder."""

    def __init__(self, api: str, key: str, out: Path, patience_s: float = PATIENCE_S) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.http = httpx.Client(
            base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=ATTEMPT_TIMEOUT_S
        )
        # uploads go through `http` (every attempt and its raw answer is the checker's);
        # following and reading back through the SDK, as an application would
        self.sdk = DocqClient(api, http=self.http)
        self.out = out
        self.record = lambda **r: self.log("deliveries", at=time.time(), **r)
        self.accepted: dict[str, str] = {}  # job id -> Idempotency-Key
        self.final: dict[str, float] = {}  # job id -> when first seen final
        self.done: dict[str, int] = {}  # job id -> its documents done, when last polled
        self.patience_s = patience_s
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.follower = threading.Thread(target=self._follow, name="follow", daemon=True)

    def log(self, name: str, **record: Any) -> None:
        """A line of out/<name>.jsonl (attempts, jobs, deliveries), from any thread."""
        with self.lock, (self.out / f"{name}.jsonl").open("a") as file:
            file.write(json.dumps(record) + "\n")

    def upload(self, key: str, body: dict[str, Any], give_up_at: float) -> str | None:
        """The job id of the first 202 (or 200: a replay) for `key`, else None (a final
        refusal, or no 202 within the client's patience)."""
        give_up_at = min(give_up_at, time.time() + self.patience_s)
        while time.time() < give_up_at:
            record: dict[str, Any] = {"key": key, "sent": time.time()}
            record.update(documents=len(body["documents"]), webhook="webhook" in body)
            try:
                r = self.http.post("/v1/jobs", json=body, headers={"Idempotency-Key": key})
            except httpx.TransportError as e:
                self.log("attempts", **record, error=type(e).__name__, answered=time.time())
                time.sleep(1.0)
                continue
            record.update(status=r.status_code, answered=time.time())
            try:
                payload = r.json()
                record.update(json=True, code=(payload.get("error") or {}).get("code"))
            except ValueError:
                payload, record["json"] = {}, False
            if r.status_code in (200, 202):
                self.log("attempts", **record, job=payload["id"])
                with self.lock:
                    self.accepted[payload["id"]] = key
                return str(payload["id"])
            self.log("attempts", **record)
            if r.status_code not in RETRY:
                return None
            time.sleep(1.0)
        return None

    def _follow(self) -> None:
        """Poll every accepted job not yet seen final, once a second; log when it is."""
        while not self.stop.wait(1.0):
            with self.lock:
                pending = [j for j in self.accepted if j not in self.final]
            for job in pending:
                try:
                    status = self.sdk.job(job)
                except (ClientError, ValueError):
                    continue
                self.done[job] = status.get("progress", {}).get("documents_done", 0)
                if status.get("status") in FINAL:
                    self.final[job] = time.time()
                    self.log("jobs", job=job, final_seen=self.final[job], status=status["status"])

    def settle(self, give_up_at: float) -> None:
        """Wait until every accepted job is seen final (or `give_up_at`), then log each
        one's results as the API returns them."""
        while time.time() < give_up_at and not set(self.accepted) <= set(self.final):
            time.sleep(1)
        self.stop.set()
        self.follower.join(30)
        for job, key in sorted(self.accepted.items()):
            try:
                results = [
                    {"id": r["id"], "label": r.get("label"), "error": r.get("error")}
                    for r in self.sdk.results(job)
                ]
                self.log("jobs", job=job, key=key, results=results)
            except (ClientError, ValueError, KeyError) as e:
                self.log("jobs", job=job, key=key, results_error=repr(e))


def fault_free_labels(client: Client, body: dict[str, Any], timeout_s: float) -> dict[str, str]:
    """The labels of a fault-free run: every document of `body` in one job."""
    job = client.upload("reference", body, time.time() + timeout_s)
    if job is None:
        raise RuntimeError("the reference upload was not accepted")
    client.sdk.wait(job, poll_s=1, timeout_s=timeout_s)
    return {r["id"]: r["label"] for r in client.sdk.results(job)}


def uploads(
    api: str,
    key: str,
    out: str,
    address: str,  # the client host's own: its webhook receiver listens there
    run: str = "run",  # the prefix of the Idempotency-Keys
    seconds: float = 60,
    settle_s: float = 180,  # after the uploads: the wait for every job to be final
    bulk_share: float = 0.1,  # of 48-document jobs
    seed: int = 0,
) -> None:
    """The fleet's client: a job every 2 s for `seconds`, then every job settled."""
    docs = corpus()  # the same for every run: one reference
    rng = random.Random(seed)
    client = Client(api, key, Path(out))
    with VerifyingReceiver(client.record).serve(address) as hook_url:
        hook = {"url": hook_url, "secret": SECRET}
        client.follower.start()
        started = time.time()
        give_up_at = started + seconds + settle_s
        threads: list[threading.Thread] = []
        while time.time() < started + seconds:
            size = 48 if rng.random() < bulk_share else rng.randint(2, 6)
            body: dict[str, Any] = {"documents": rng.sample(docs, size)}
            if rng.random() < 0.75:
                body["webhook"] = hook
            args = (f"{run}-{len(threads)}", body, give_up_at)
            threads.append(threading.Thread(target=client.upload, args=args, daemon=True))
            threads[-1].start()
            time.sleep(max(0.0, started + len(threads) * 2.0 - time.time()))
        for t in threads:
            t.join(max(0.0, give_up_at - time.time()) + ATTEMPT_TIMEOUT_S)
        client.settle(give_up_at)
        time.sleep(5)  # the last deliveries (and any duplicate) arrive meanwhile
    client.http.close()
    print(f"client: {len(threads)} uploads, {len(client.accepted)} accepted", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].startswith("{"):  # --help, or no CONFIG
        sys.exit(__doc__)
    uploads(**json.loads(sys.argv[1]))
