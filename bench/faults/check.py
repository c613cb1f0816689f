"""The fault runs' checker: it believes only what the client saw (client.py's logs: every
upload attempt and its answer, every verified webhook delivery, every job's state and
results as the API returned them), and the labels of a fault-free run of the same
documents. Nothing docq counts about itself is read.

For every upload answered 202: each document answered exactly once, with the fault-free
label; the job final; with a webhook, its event delivered, one event id per job and final
state, never two outcomes. No event for a job the client never got a 202 for. Every 5xx a
JSON error, no attempt left unanswered past the client's timeout while the API was
reachable (a hang); after each heal, a 202 again within RECOVER_S; the last job final
within FINAL_S of the last heal. With `events_once` (the chaos run's, where no link drops
a 200), no event delivered twice.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

RECOVER_S = 30.0
FINAL_S = 120.0


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check(
    out: Path,
    expected: dict[str, str],
    faults: list[dict[str, Any]],
    uploads_end: float,
    events_once: bool = False,
) -> dict[str, Any]:
    """The run's measures and, under "violations", every invariant that did not hold.
    `faults`: each {"name", "applied", "healed", "client_cut"} (times from time.time());
    `uploads_end`: when the client stopped starting uploads."""
    attempts = lines(out / "attempts.jsonl")
    jobs = lines(out / "jobs.jsonl")
    ok = [a for a in attempts if a.get("status") in (200, 202)]
    accepted = {a["job"]: a for a in ok}  # job -> its accepted attempt
    key_jobs: dict[str, set[str]] = defaultdict(set)
    for a in ok:
        key_jobs[a["key"]].add(a["job"])
    final_seen = {j["job"]: j["final_seen"] for j in jobs if "final_seen" in j}
    results = {j["job"]: j for j in jobs if "key" in j}
    v: list[str] = []
    report: dict[str, Any] = {
        "uploads": len({a["key"] for a in attempts}),
        "attempts": len(attempts),
        "accepted": len(accepted),
        "documents": sum(a["documents"] for a in accepted.values()),
    }
    # Uploads never accepted: a final refusal, or still refused when the client's patience
    # ran out (with their answers, to find them in the API's log). Not a loss: reported.
    answers: dict[str, list[str]] = defaultdict(list)
    for a in attempts:
        answers[a["key"]].append(str(a.get("code") or a.get("status") or a.get("error")))
    report["refused"] = {k: v for k, v in answers.items() if k not in key_jobs}
    if two_jobs := sorted(k for k, js in key_jobs.items() if len(js) > 1):
        v.append(f"Idempotency-Keys answered with two different jobs: {two_jobs}")

    counts = dict.fromkeys(("lost", "duplicated", "relabelled", "failed"), 0)
    for job, a in accepted.items():
        got = results.get(job, {}).get("results")
        if got is None:
            v.append(f"job {job}: results not readable ({results.get(job)})")
            counts["lost"] += a["documents"]
            continue
        ids = [r["id"] for r in got]
        counts["duplicated"] += len(ids) - len(set(ids))
        counts["lost"] += max(0, a["documents"] - len(set(ids)))
        counts["failed"] += sum(1 for r in got if r.get("error"))
        counts["relabelled"] += sum(
            1 for r in got if r.get("label") and r["label"] != expected.get(r["id"])
        )
    report.update(counts)
    v += [f"{n} documents {name}" for name, n in counts.items() if n]
    report["not_final"] = not_final = sorted(set(accepted) - set(final_seen))
    if not_final:
        v.append(f"{len(not_final)} accepted jobs never seen final: {not_final[:5]}")

    deliveries = lines(out / "deliveries.jsonl")
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in deliveries:
        if d.get("bad_signature"):
            v.append("a delivery whose signature did not verify")
        else:
            events[d["job"]].append(d)
    delivered = Counter(d["webhook_id"] for ds in events.values() for d in ds)
    hooks: dict[str, Any] = {
        "deliveries": len(deliveries),
        "jobs": len(events),
        "retried": sum(len(ds) - 1 for ds in events.values()),
        "twice": sorted(w for w, n in delivered.items() if n > 1),
        "missing": sorted({j for j, a in accepted.items() if a.get("webhook")} - set(events)),
        "conflicting": sorted(j for j, ds in events.items() if len({d["status"] for d in ds}) > 1),
        "two_event_ids": sorted(
            j
            for j, ds in events.items()
            if len({d["webhook_id"] for d in ds}) > len({d["type"] for d in ds})
        ),
        "phantom_jobs": sorted(set(events) - set(accepted)),
    }
    report["webhooks"] = hooks
    for name, says in [
        ("missing", "jobs' webhook events never delivered"),
        ("conflicting", "jobs whose events carried two different outcomes"),
        ("two_event_ids", "jobs with two event ids for one final state"),
        ("twice", "events delivered twice"),
        ("phantom_jobs", "events for jobs the client never got a 202 for"),
    ]:
        if hooks[name] and (name != "twice" or events_once):
            v.append(f"{says}: {hooks[name][:5]} ({len(hooks[name])})")

    cut_windows = [(f["applied"], f["healed"]) for f in faults if f.get("client_cut")]
    hangs = [
        a
        for a in attempts
        if a.get("error") == "ReadTimeout"
        and not any(s - 1 <= a["sent"] <= e + 1 for s, e in cut_windows)
    ]
    bad_5xx = [
        a for a in attempts if a.get("status", 0) >= 500 and not (a.get("json") and a.get("code"))
    ]
    report.update(hangs=len(hangs), non_json_5xx=len(bad_5xx))
    # how the attempts were answered: by status code, or by the client's transport error
    report["answers"] = dict(Counter(str(a.get("status") or a.get("error")) for a in attempts))
    if hangs:
        v.append(f"{len(hangs)} uploads left unanswered past the client's timeout (hang)")
    if bad_5xx:
        v.append(f"{len(bad_5xx)} 5xx answers that were not a JSON error")

    ok_times = sorted(a["answered"] for a in ok)
    report["recovery"] = []
    for f in faults:
        first = next((round(t - f["healed"], 1) for t in ok_times if t >= f["healed"]), None)
        # the slowest answer (of any status) to an upload sent while the fault held
        during = [
            a["answered"] - a["sent"]
            for a in attempts
            if f["applied"] <= a["sent"] <= f["healed"] and "status" in a
        ]
        longest = round(max(during), 1) if during else None
        report["recovery"].append(
            {"fault": f["name"], "first_202_after_heal_s": first, "longest_answer_s": longest}
        )
        # no 202 soon after a heal; unless the uploads stopped too soon to tell
        if (first is None or first > RECOVER_S) and f["healed"] + RECOVER_S <= uploads_end:
            v.append(f"after {f['name']} healed, no 202 for {first or 'ever'} s (> {RECOVER_S})")
    last_heal = max((f["healed"] for f in faults), default=0.0)
    last_final = max(final_seen.values(), default=last_heal)
    report["last_final_after_last_heal_s"] = round(last_final - last_heal, 1) if faults else None
    if faults and last_final - last_heal > FINAL_S:
        v.append(f"last job final {last_final - last_heal:.0f} s after the last heal (> {FINAL_S})")
    report["violations"] = v
    return report
