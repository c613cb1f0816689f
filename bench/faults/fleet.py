"""One fleet run: the client (client.py, inside the `client` host) uploads at a steady rate
while nemeses (devstack/fleet/nemesis.py) are applied and healed one after another, then
the checker (check.py) judges what the client saw. The scenarios of tests/fleet and
`python -m bench.faults fleet` are each one call of `run`.
"""

from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.faults.check import check
from bench.faults.client import Client, corpus, fault_free_labels
from devstack.fleet.fleet import Fleet
from devstack.fleet.nemesis import CLIENT, Isolate, LoseHost, Nemesis, catalogue
from devstack.stack import REPO

log = logging.getLogger("fleet")


@dataclass(frozen=True)
class Step:
    """A nemesis held for `hold_s` seconds, after `wait_s` seconds of calm."""

    nemesis: Nemesis
    hold_s: float
    wait_s: float = 10.0


def reference(fleet: Fleet, out: Path) -> dict[str, str]:
    """The labels of a fault-free run of the runs' documents (client.CORPUS_SEED's), uploaded
    from the controller: no fault holds, so where the client stands does not matter."""
    client = Client(fleet.layout.api_url, fleet.api_key("fleet-reference"), out)
    try:
        return fault_free_labels(client, {"documents": corpus()}, 300)
    finally:
        client.http.close()


def run(
    fleet: Fleet,
    steps: list[Step],
    out: Path,
    *,
    seed: int = 0,
    tail_s: float = 30.0,
    client: dict[str, Any] | None = None,
    expected: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Upload through every step and `tail_s` seconds past the last heal; the checker's
    report (also written to out/report.json). `client`: more of client.uploads' arguments;
    `expected`: the fault-free labels, when a reference run (`reference`) already made them."""
    out.mkdir(parents=True, exist_ok=True)
    if expected is None:
        expected = reference(fleet, out / "reference")
    seconds = sum(s.wait_s + s.hold_s for s in steps) + tail_s
    key = fleet.api_key(f"fleet-{seed}")
    started = time.time()
    config: dict[str, Any] = dict(api=fleet.layout.api_url, key=key, out=str(out), seed=seed)
    config.update(address=fleet.layout.address(CLIENT), run=f"run{seed}-{int(started)}")
    config.update(seconds=seconds, **(client or {}))
    argv = ["ip", "netns", "exec", fleet.net.ns(CLIENT), sys.executable, "-m"]
    with (out / "client.log").open("ab") as log_file:  # the client inside its host
        proc = subprocess.Popen(
            [*argv, "bench.faults.client", json.dumps(config)],
            cwd=REPO,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    faults: list[dict[str, Any]] = []
    try:
        for step in steps:
            time.sleep(step.wait_s)
            applied = time.time()
            what = step.nemesis.apply(fleet)
            log.info("nemesis %s: %s, for %.0f s", step.nemesis.name, what, step.hold_s)
            time.sleep(max(0.0, applied + step.hold_s - time.time()))
            step.nemesis.heal(fleet)
            n = step.nemesis
            fault = {"name": n.name, "what": what, "applied": applied, "healed": time.time()}
            log.info("healed %s", n.name)
            # whether the fault kept the client from the API (its timeouts are no hang then)
            cut = isinstance(n, (Isolate, LoseHost)) and n.host in ("api", CLIENT)
            faults.append({**fault, "client_cut": cut})
    finally:
        for step in steps[len(faults) :]:  # a failure mid-step: heal what may be applied
            try:
                step.nemesis.heal(fleet)
            except Exception:  # the failure that got here is the one to report
                log.exception("healing %s after a failure", step.nemesis.name)
    if rc := proc.wait():
        raise RuntimeError(f"the client failed ({rc}; log: {out / 'client.log'})")
    report = check(out, expected, faults, started + seconds)
    report = {"seed": seed, "seconds": round(seconds, 1), "faults": faults, **report}
    report["exited"] = [list(e) for e in fleet.exited()]
    # what ended by itself during the run and the fleet's supervisor started again
    report["restarted"] = [r for r in fleet.restarts if float(str(r["at"])) >= started]
    (out / "report.json").write_text(json.dumps(report, indent=1))
    return report


def random_steps(seconds: float, seed: int, hold: tuple[float, float] = (15, 30)) -> list[Step]:
    """Nemeses in a seeded random order (each at most once), held 15-30 s, 10 s apart,
    until `seconds` is used up."""
    rng = random.Random(seed)
    pool = catalogue()
    rng.shuffle(pool)
    steps: list[Step] = []
    used = 0.0
    for nemesis in pool:
        hold_s = round(rng.uniform(*hold), 1)
        if used + 10 + hold_s > seconds:
            break
        steps.append(Step(nemesis, hold_s))
        used += 10 + hold_s
    return steps
