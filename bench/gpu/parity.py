"""The parity gate on the GPU host: both demo models through the served torch-gpu runtime.

`docq validate` compares a candidate with the PyTorch FP32 reference on 10,000 labelled
documents. Here the candidate is the real thing: each demo model laid out as docq lays out
a `torch-gpu` model (FP16, CUDA graphs for small batches, eager beyond), served by a real
tritonserver on the GPU and called over gRPC (`triton:HOST:PORT/MODEL`), against the FP32
checkpoint on the same GPU (TF32 off). With `--cpu`, each model's CPU runtime too (below).

The checkpoints travel pruned (`conversion.prune`: only the embedding rows the documents
use, the others NaN, so a document needing another row cannot pass unseen), doc-lang
without what it shares with doc-type, as two parts (devstack/carry/parts.py: the device
tool carries 64 MiB a call), and wait in the stash for the run:

    here:   .venv/bin/python -m bench.gpu.parity pack          # .parity/: pruned + configs
    there:  python3 -m bench.gpu.parity stash .parity/part-1    # one call per part
            python3 -m bench.gpu.parity run --out $OUT [--cpu]  # after `source remote.sh`
    here:   .venv/bin/python -m bench.gpu.parity mark GATE.json SERVE.json PIPELINE.json

`run` gates every request size the runtime serves by its own path (`--batch-sizes`:
1-8 windows through the CUDA graphs, 64 and 128 eager, 128 four at a time through the
overlapped execute; bench/gpu/gate.py), both models at once, and writes `gate.json` with
the commit it ran at; `mark` writes into a published result whether its gate ran at the
same commit.

`--cpu` gates each model's CPU runtime as `make up` serves it (the fused ONNX graph), with
the exporter this checkout tests carried (`devstack.carry.pack --profile convert`;
docs/performance.md, Parity, has the calls). OpenVINO, which the GPU host lacks, is gated
where it is installed: `docq convert --runtime openvino-cpu`, then `docq validate`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.gpu.gate import REFERENCE_BATCH, SEED, N, gate_model, mark
from devstack.carry.parts import dedupe, join, keep, split, undedupe

MODELS = ("doc-type", "doc-lang")
PARITY = Path(".parity")
STASH = Path("/tmp/docq-parity-stash")
# Every path the torch-gpu runtime serves a batch by, at the converter's defaults: 1-8
# windows replay the small batches' CUDA graphs, 64 and 128 run eager (cuDNN blocks,
# overlapped execute); `128x4` sends 4 requests of 128 at once, so two batches are in
# flight in the overlapped execute. Most telling first: a run out of time skips the last.
BATCH_SIZES = "128,64,128x4,8,1,2,4,7,3,5,6"


def pack(n: int) -> None:
    """`.parity/NAME/`: the pruned weights of each model and its config and tokenizer."""
    from conversion.prune import main as prune

    for name in MODELS:
        folder = PARITY / name
        folder.mkdir(parents=True, exist_ok=True)
        checkpoint = Path("build") / name / "checkpoint"
        for path in checkpoint.iterdir():
            if path.suffix != ".safetensors":
                shutil.copyfile(path, folder / path.name)
        prune(
            [str(checkpoint), "--corpus", name, "--n", str(n), "--seed", str(SEED),
             "--out", str(folder / "pruned.safetensors")]
        )  # fmt: skip
    saved = dedupe(PARITY / MODELS[0], PARITY / MODELS[1])
    pieces = split(PARITY, list(MODELS))
    print(f"{MODELS[1]} shares {saved / 1e6:.1f} MB with {MODELS[0]}; parts to carry one a call:")
    for piece in pieces:
        print(f"  {piece.parent} ({piece.stat().st_size / 2**20:.1f} MiB)")


def stash(folder: Path) -> None:
    """Keep a part of the two models (`.parity/part-N`) on the device for a later call (the
    tree does not stay)."""
    for piece in folder.iterdir():
        keep(STASH, piece)
    print(f"stashed {sorted(p.name for p in (STASH / 'parts').iterdir())}")


def restore(name: str, work: Path, fill: str = "nan") -> Path:
    from conversion.prune import restore as rebuild

    out = work / f"{name}-{fill}"
    rebuild(STASH / name / "pruned.safetensors", STASH / name, out, fill=fill)
    return out


class Run(argparse.Namespace):
    out: Path
    n: int
    reference: str
    threads: int
    models: list[str]
    variant: list[str]
    batch_size: int
    batch_sizes: str
    budget_s: float


def run_gpu(run: Run, work: Path) -> dict[str, int]:
    import torch

    from bench.gpu.model import Variant, publish_variant
    from bench.gpu.report import tree_note
    from devstack.services import triton_server

    repo = work / "repo"
    checkpoints = {name: restore(name, work) for name in MODELS}
    variants = [Variant.parse(v) for v in run.variant] or [Variant("fp16")]
    served = []
    for name, checkpoint in checkpoints.items():
        ids = json.loads((checkpoint / "config.json").read_text())["id2label"]
        labels = [ids[str(i)] for i in range(len(ids))]
        for v in variants:  # laid out as `docq convert --runtime torch-gpu` lays it out
            served.append(f"{name}-{v.name}")
            variant = Variant(served[-1], v.overrides)
            publish_variant(repo, checkpoint, variant, torch.cuda.is_available(), labels)
    summary: dict = {"tree": tree_note(), "n": run.n, "batch_sizes": run.batch_sizes}
    summary["variants"] = {v.name: v.overrides for v in variants}
    summary["models"] = {name: {"runs": [], "skipped": []} for name in checkpoints}
    lock = threading.Lock()

    def save() -> None:  # after each size: a call cut short keeps what it gated
        with lock:
            (run.out / "gate.json").write_text(json.dumps(summary, indent=1) + "\n")

    deadline = time.monotonic() + run.budget_s
    # the two models at once: each has its own instance, so no batch mixes them
    server = triton_server(repo, run.out / "triton.log", models=served, timeout=300)
    with server as url, ThreadPoolExecutor(len(checkpoints)) as pool:
        variant_names = [v.name for v in variants]
        futures = [
            pool.submit(gate_model, run, name, ckpt, url, variant_names, deadline,
                        summary["models"][name], save)
            for name, ckpt in checkpoints.items()
        ]  # fmt: skip
        for f in futures:
            f.result()
    codes = {
        name: int(not all(r["passed"] for r in got["runs"]) or bool(got["skipped"]))
        for name, got in summary["models"].items()
    }
    summary["passed"] = not any(codes.values())
    save()
    return codes


def run_cpu(run: Run, work: Path) -> dict[str, int]:
    """Each model's fused ONNX graph, built here by `docq convert` from the checkpoint with
    the unused rows zeroed (its ONNX check feeds random tokens); the reference keeps NaN
    rows. The exporter must be the tested one: `devstack.carry.pack --profile convert`."""
    codes = {}
    for name in run.models:
        zeroed, reference = restore(name, work, fill="zero"), restore(name, work)
        workdir = work / f"convert-{name}"
        convert = [
            "convert", str(zeroed), "--name", name, "--runtime", "onnx-cpu", "--fuse",
            "--threads", str(run.threads), "--workdir", str(workdir),
        ]  # fmt: skip
        validate = [
            "validate", str(reference), "--reference", run.reference, "--corpus", name,
            "--candidate", f"onnx:{workdir / name / 'version' / 'model.onnx'}",
            "--n", str(run.n), "--seed", str(SEED), "--batch-size", str(run.batch_size),
            "--threads", str(run.threads), "--out", str(run.out / f"{name}-{run.n}-cpu-fused"),
        ]  # fmt: skip
        for step in (convert, validate):
            print("+ docq", " ".join(step), flush=True)
            code = subprocess.run([sys.executable, "-m", "conversion.cli", *step]).returncode
            if code:
                break
        codes[f"{name}-cpu"] = code
    return codes


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu.parity", description=__doc__)
    sub = ap.add_subparsers(dest="step", required=True)
    sub.add_parser("pack").add_argument("--n", type=int, default=N)
    sub.add_parser("stash").add_argument("folder", type=Path)
    marks = sub.add_parser("mark", help="set serve/pipeline JSONs beside the gate's commit")
    marks.add_argument("gate", type=Path)
    marks.add_argument("results", type=Path, nargs="+")
    run = sub.add_parser("run")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--n", type=int, default=N)
    run.add_argument("--gpu", action=argparse.BooleanOptionalAction, default=True)
    run.add_argument("--cpu", action="store_true", help="the models' fused ONNX graphs too")
    run.add_argument(
        "--models", type=lambda v: v.split(","), default=list(MODELS),
        help="with --cpu, which models (comma-separated): one a call keeps it under 10 minutes",
    )  # fmt: skip
    run.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    run.add_argument(
        "--batch-size", type=int, default=REFERENCE_BATCH, help="windows per call, --cpu only"
    )
    run.add_argument(
        "--batch-sizes", default=BATCH_SIZES,
        help="windows per served request, each a gate of its own (SIZE or SIZExIN_FLIGHT)",
    )  # fmt: skip
    run.add_argument(
        "--budget-s", type=float, default=480, help="start no batch size after this; said so"
    )
    run.add_argument("--reference", default="torch:fp32:cuda", help="torch:fp32 rehearses on CPU")
    run.add_argument(
        "--variant", action="append", default=[],
        help="NAME[:field=value,...]: a served torch-gpu variant (default: fp16, the Target's)",
    )  # fmt: skip
    args = ap.parse_args(namespace=Run())
    if args.step == "pack":
        return pack(args.n)
    if args.step == "stash":
        return stash(args.folder)
    if args.step == "mark":
        return print("\n".join(mark(args.gate, args.results)))
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/docq-parity-work")
    shutil.rmtree(work, ignore_errors=True)
    if (STASH / "parts").exists() and (missing := join(STASH)):
        print(f"the gate cannot run: not stashed on this machine: {missing}", flush=True)
        (args.out / "gate.json").write_text(json.dumps({"missing": missing}) + "\n")
        raise SystemExit(2)
    undedupe(STASH / MODELS[0], STASH / MODELS[1])
    codes = run_gpu(args, work) if args.gpu else {}
    if args.cpu:
        codes |= run_cpu(args, work)
    print(json.dumps(codes))
    raise SystemExit(1 if any(codes.values()) else 0)


if __name__ == "__main__":
    main()
