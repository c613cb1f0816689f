"""The torch-gpu runtime served by a real tritonserver, against the old runtime, on one GPU.

Builds a RoBERTa-large-shaped classifier (24 layers, 1,024 wide, 16 heads, 6 labels, random
weights: timing does not depend on them) from a transformers config, lays it out as
`docq convert --runtime torch-gpu` does (the checkpoint, `serving.runtimes.install`, the
config.pbtxt that `conversion.convert.Target` and `conversion.pbtxt` generate), starts
tritonserver (`serving.server`'s command and environment; on the device the trimmed server
of bench/gpu/pack.py, which remote.sh puts where `serving.server` looks) and measures
through gRPC:

- p50/p95 of one request at a time at (1,256), (1,512), (2,512), (7,512);
- seq/s over a sweep of requests in flight (client processes x threads), up to saturation
  (the sweep stops once one more doubling gains less than 3%).

In the same run, before the server starts, the old runtime: PyTorch FP32 eager in-process,
one synchronous call per request, as the old FastAPI service ran it. Each `--variant`
(NAME or NAME:key=value,...) is one more model in the same server with Target fields
overridden; the first is the generated default and gets the full sweep. Prints the table
(rich) and writes the JSON to --out.

    # on the H200 (bench/gpu/RESULTS-serve.md has the exact command):
    source bench/gpu/remote.sh
    python3 -m bench.gpu.serve --out $OUT/serve.json
    # rehearsal on a CPU machine, tiny model, the wheel's server:
    .venv/bin/python -m bench.gpu.serve --tiny --seconds 1 --out /tmp/serve.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

# (rows, tokens, the last row's share of real tokens): (7, 512, 0.6) is real traffic, a
# document's windows with its short last one (key "7x512p"); every other row is full.
SHAPES = [(1, 256, 1.0), (1, 512, 1.0), (2, 512, 1.0), (7, 512, 1.0), (7, 512, 0.6)]
VARIANT_SHAPES = SHAPES[1:]
TARGETS = {
    "p50_ms_1x512": 2.5,  # (1,512) one at a time, p50 at most
    "seq_s_7x512": 1600.0,  # (7,512) saturated, at least
    "ratio_2x512": 14.0,  # (2,512) saturated over the old runtime, at least
    # (7,512) with a 60%-long last row: tokens/s over full rows', at least (no padding cost)
    "tokens_7x512p_over_full": 1.0,
}
IN_FLIGHT = [1, 2, 4, 8, 16, 32, 64]
LABELS = ("invoice", "receipt", "contract", "letter", "report", "other")
MAX_BATCH, MAX_LEN, VOCAB = 64, 512, 50265


PARAM = "param."  # a variant's `param.sdpa_backend=cudnn`: a config parameter, not a field


@dataclass
class Variant:
    """One served model: a name, the Target fields and the runtime parameters it overrides."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Variant:
        name, _, rest = text.partition(":")
        overrides: dict[str, Any] = {}
        for item in filter(None, rest.split(",")):
            key, _, value = item.partition("=")
            overrides[key] = int(value) if value.lstrip("-").isdigit() else value
        return cls(name, overrides)


# --- the model ---------------------------------------------------------------------------


def roberta_config(tiny: bool) -> Any:
    """RoBERTa-large's shape with 6 labels (or a 2-layer one for a CPU rehearsal)."""
    from transformers import RobertaConfig

    size = (
        {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
        if tiny
        else {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16}
    )
    return RobertaConfig(
        vocab_size=VOCAB,
        intermediate_size=4 * size["hidden_size"],
        max_position_embeddings=MAX_LEN + 2,
        type_vocab_size=1,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
        **size,
    )


def build_checkpoint(folder: Path, tiny: bool, device: str) -> dict[str, int]:
    """Save a random RoBERTa classifier (large, or tiny for a CPU rehearsal) in `folder`."""
    import torch
    from transformers import AutoModelForSequenceClassification

    config = roberta_config(tiny)
    torch.manual_seed(0)
    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    with torch.device(device):  # random init on the GPU: seconds, not a minute
        model = AutoModelForSequenceClassification.from_config(config, dtype=dtype)
    model.eval().save_pretrained(folder, safe_serialization=True)
    del model
    return {
        k: getattr(config, k) for k in ("hidden_size", "num_hidden_layers", "num_attention_heads")
    }


def publish_variant(repo: Path, checkpoint: Path, variant: Variant, on_gpu: bool) -> Any:
    """`repo/<variant>/1/` as docq convert lays out a torch-gpu model; its ModelConfig."""
    from tritonclient.grpc import model_config_pb2 as mc

    from conversion import convert, pbtxt
    from serving import runtimes

    fields_ = {k: v for k, v in variant.overrides.items() if not k.startswith(PARAM)}
    target = convert.Target(
        variant.name, "torch-gpu", max_batch_size=MAX_BATCH, max_seq_len=MAX_LEN, **fields_
    )
    config = pbtxt.build(target.classifier_config(len(LABELS)))
    for key, value in variant.overrides.items():  # runtime parameters Target has no field for
        if key.startswith(PARAM):
            config.parameters[key.removeprefix(PARAM)].string_value = str(value)
    if not on_gpu:  # the CPU rehearsal: the same runtime file, an instance of kind CPU
        config.instance_group[0].kind = mc.ModelInstanceGroup.KIND_CPU
    model_dir = repo / variant.name
    version = model_dir / "1"
    version.mkdir(parents=True)
    for path in checkpoint.iterdir():  # hard links: one copy of the weights on disk
        os.link(path, version / path.name)
    runtimes.install("torch_gpu", version)
    pbtxt.write(config, model_dir / "config.pbtxt")
    (model_dir / "labels.txt").write_text("".join(f"{x}\n" for x in LABELS), encoding="utf-8")
    return config


def key(shape: tuple[int, int, float]) -> str:
    rows, length, last = shape
    return f"{rows}x{length}" + ("p" if last < 1 else "")


def real_tokens(shape: tuple[int, int, float]) -> int:
    rows, length, last = shape
    return (rows - 1) * length + int(length * last)


def windows(rows: int, length: int, seed: int, last: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Full windows (every token real), as long documents give them; with `last` < 1 the
    last row holds that share of real tokens, then padding (id 1, mask 0)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, VOCAB, (rows, length), dtype=np.int64)
    ids[:, 0] = 0  # <s>
    mask = np.ones((rows, length), dtype=np.int64)
    if last < 1:
        mask[-1, int(length * last) :] = 0
        ids[-1, int(length * last) :] = 1  # RoBERTa's <pad>
    return ids, mask


def parity_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """Requests whose served logits are compared with the FP32 reference: full and partial
    rows of several lengths (448 windows)."""
    shapes = [(7, 512, 0.6), (8, 384, 0.3), (16, 128, 0.5), (1, 512, 1.0)]
    return [windows(*shapes[i % len(shapes)][:2], 500 + i, shapes[i % len(shapes)][2])
            for i in range(16)]  # fmt: skip


def parity(url: str, model: str, reference: list[Any]) -> dict[str, Any]:
    """The served logits against the FP32 reference: max |diff|, and label agreement."""
    client = _client(url, 20_000)
    diffs, same, rows = [], 0, 0
    for (ids, mask), ref in zip(parity_batches(), reference, strict=True):
        got = client.infer(model, _tensors(ids, mask)).as_numpy("logits")
        expected = np.asarray(ref, dtype=np.float32)
        diffs.append(float(np.abs(got - expected).max()))
        same += int((got.argmax(1) == expected.argmax(1)).sum())
        rows += len(expected)
    return {
        "windows": rows,
        "max_abs_diff": round(max(diffs), 5),
        "label_agreement": round(same / rows, 4),
        "logit_range": round(float(np.ptp(np.concatenate([np.asarray(r) for r in reference]))), 3),
    }


def old_runtime(checkpoint: Path, device: str, repeat: int) -> dict[str, Any]:
    """PyTorch FP32 eager in-process, one synchronous call per request: ms and seq/s."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = (
        AutoModelForSequenceClassification.from_pretrained(str(checkpoint), dtype=torch.float32)
        .to(device)
        .eval()
    )
    out: dict[str, Any] = {}
    with torch.inference_mode():
        for rows, length, _ in (x for x in SHAPES if x[2] == 1.0):
            ids, mask = windows(rows, length, rows * 7 + length)

            def call(ids: np.ndarray = ids, mask: np.ndarray = mask) -> None:
                logits = model(
                    input_ids=torch.from_numpy(ids).to(device),
                    attention_mask=torch.from_numpy(mask).to(device),
                ).logits
                logits.cpu()

            for _ in range(3):
                call()
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                call()
                times.append((time.perf_counter() - t) * 1000)
            p50 = statistics.median(times)
            out[f"{rows}x{length}"] = {
                "p50_ms": round(p50, 3),
                "seq_s": round(rows / p50 * 1000, 1),
                "samples_ms": [round(t, 3) for t in times],
            }
    torch.backends.cuda.matmul.allow_tf32 = False  # the FP32 reference of the parity check
    with torch.inference_mode():
        out["parity_reference"] = [
            model(
                input_ids=torch.from_numpy(ids).to(device),
                attention_mask=torch.from_numpy(mask).to(device),
            )
            .logits.float()
            .cpu()
            .numpy()
            .tolist()
            for ids, mask in parity_batches()
        ]
    model.to("cpu")  # the GPU's memory is the server's next
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return out


# --- the server --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(repo: Path, names: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """tritonserver serving `names` from `repo` (explicit model control); its gRPC address."""
    from serving.server import server_command, server_env

    http, grpc, metrics = free_port(), free_port(), free_port()
    cmd = server_command(repo, http, grpc, metrics, model_control="explicit", load=names)
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            cmd, stdout=sink, stderr=subprocess.STDOUT, env=server_env(dict(os.environ))
        )
    return proc, f"127.0.0.1:{grpc}"


def wait_ready(proc: subprocess.Popen[bytes], url: str, names: list[str], timeout: float) -> None:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tritonserver exited with {proc.returncode}")
        try:
            if client.is_server_ready() and all(client.is_model_ready(n) for n in names):
                client.close()
                return
        except Exception:  # not listening yet
            pass
        time.sleep(0.5)
    raise TimeoutError(f"models {names} not ready after {timeout} s")


# --- the load: client processes, each with threads, each thread one request at a time ----

_CLIENTS: dict[tuple[str, int], Any] = {}


def _client(url: str, slot: int) -> Any:
    import tritonclient.grpc as grpcclient

    key = (url, slot)
    if key not in _CLIENTS:
        _CLIENTS[key] = grpcclient.InferenceServerClient(url)
    return _CLIENTS[key]


def _inputs(rows: int, length: int, last: float, seed: int) -> list[Any]:
    return _tensors(*windows(rows, length, seed, last))


def _tensors(ids: np.ndarray, mask: np.ndarray) -> list[Any]:
    """The gRPC inputs of one request."""
    import tritonclient.grpc as grpcclient

    inputs = []
    for name, array in (("input_ids", ids), ("attention_mask", mask)):
        tensor = grpcclient.InferInput(name, list(array.shape), "INT64")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    return inputs


def load_task(
    task: tuple[str, str, int, int, float, int, float, float, float],
) -> list[list[float]]:
    """Run `threads` request loops from `start_at` (wall clock) for warm + seconds; per
    thread, the latencies (ms) of the requests that ended inside the measured window."""
    url, model, rows, length, last, threads, start_at, warm, seconds = task
    results: list[list[float]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []

    def loop(slot: int) -> None:
        try:
            client = _client(url, slot)
            inputs = _inputs(rows, length, last, slot)
            while time.time() < start_at:
                time.sleep(0.001)
            begin, end = start_at + warm, start_at + warm + seconds
            while True:
                t = time.time()
                if t >= end:
                    break
                client.infer(model, inputs)
                done = time.time()
                if begin <= done < end:
                    results[slot].append((done - t) * 1000)
        except BaseException as exc:  # reported by the parent
            errors.append(exc)

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return results


class Load:
    """A pool of client processes (spawned: gRPC does not survive fork)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self.pool = mp.get_context("spawn").Pool(processes)

    def run(
        self,
        url: str,
        model: str,
        shape: tuple[int, int, float],
        in_flight: int,
        warm: float,
        seconds: float,
    ) -> dict[str, Any]:
        procs = min(self.processes, in_flight)
        per = [in_flight // procs + (1 if i < in_flight % procs else 0) for i in range(procs)]
        start_at = time.time() + 0.3
        tasks = [(url, model, *shape, n, start_at, warm, seconds) for n in per]
        latencies = [ms for part in self.pool.map(load_task, tasks) for t in part for ms in t]
        rows = shape[0]
        return {
            "in_flight": in_flight,
            "requests": len(latencies),
            "seq_s": round(len(latencies) * rows / seconds, 1),
            "tokens_s": round(len(latencies) * real_tokens(shape) / seconds),
            "p50_ms": round(statistics.median(latencies), 3) if latencies else None,
            "p95_ms": round(float(np.percentile(latencies, 95)), 3) if latencies else None,
        }

    def close(self) -> None:
        self.pool.terminate()


def one_at_a_time(url: str, model: str, shape: tuple[int, int, float], n: int) -> dict[str, Any]:
    client = _client(url, 10_000)
    inputs = _inputs(*shape, seed=1)
    logits = client.infer(model, inputs).as_numpy("logits")
    if logits is None or logits.shape != (shape[0], len(LABELS)) or not np.isfinite(logits).all():
        raise RuntimeError(f"{model} answered {shape} with logits {logits!r}")
    for _ in range(10):
        client.infer(model, inputs)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        client.infer(model, inputs)
        times.append((time.perf_counter() - t) * 1000)
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(float(np.percentile(times, 95)), 3),
        "samples_ms": [round(t, 3) for t in times],
    }


def sweep(
    load: Load,
    url: str,
    model: str,
    shape: tuple[int, int, float],
    levels: list[int],
    warm: float,
    seconds: float,
    early_stop: bool = True,
) -> list[dict[str, Any]]:
    """seq/s at each number of requests in flight; with `early_stop`, until a level gains
    less than 3% over the best before it (from the fourth level on)."""
    points: list[dict[str, Any]] = []
    for level in levels:
        points.append(load.run(url, model, shape, level, warm, seconds))
        print(f"  {model} {shape} x{level}: {points[-1]}", flush=True)
        best = max(p["seq_s"] for p in points[:-1]) if len(points) > 1 else 0.0
        if early_stop and len(points) >= 4 and points[-1]["seq_s"] < 1.03 * best:
            break
    return points


def batch_stats(url: str, model: str) -> dict[str, int]:
    """How many executions Triton ran at each batch size (rows), from its statistics."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    stats = client.get_inference_statistics(model).model_stats
    client.close()
    return {str(b.batch_size): int(b.compute_infer.count) for s in stats for b in s.batch_stats}


# --- the report --------------------------------------------------------------------------


def summarise(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per shape: served p50/p95, saturated seq/s, the old runtime, the ratio."""
    default = result["variants"][0]["name"]
    served = result["served"][default]
    rows_out = []
    for shape in SHAPES:
        name = key(shape)
        s, old = served[name], result["old_runtime"].get(key((*shape[:2], 1.0)))
        best = max(s["sweep"], key=lambda p: p["seq_s"])
        rows_out.append(
            {
                "shape": name,
                "p50_ms": s["one_at_a_time"]["p50_ms"],
                "p95_ms": s["one_at_a_time"]["p95_ms"],
                "seq_s": best["seq_s"],
                "tokens_s": best.get("tokens_s"),
                "in_flight": best["in_flight"],
                "old_p50_ms": old["p50_ms"],
                "old_seq_s": old["seq_s"],
                "ratio": round(best["seq_s"] / old["seq_s"], 2),
            }
        )
    return rows_out


def targets(table: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by = {r["shape"]: r for r in table}
    got = {
        "p50_ms_1x512": by["1x512"]["p50_ms"],
        "seq_s_7x512": by["7x512"]["seq_s"],
        "ratio_2x512": by["2x512"]["ratio"],
        "tokens_7x512p_over_full": round(by["7x512p"]["tokens_s"] / by["7x512"]["tokens_s"], 3),
    }
    return {
        k: {
            "target": TARGETS[k],
            "got": v,
            "met": v <= TARGETS[k] if k.startswith("p50") else v >= TARGETS[k],
        }
        for k, v in got.items()
    }


def show(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"torch-gpu through tritonserver vs the old runtime — {result['device']}")
    for col in (
        "shape",
        "p50 ms (1 at a time)",
        "p95 ms",
        "seq/s saturated (in flight)",
        "real tokens/s",
        "old FP32 eager ms",
        "old seq/s",
        "ratio",
    ):
        table.add_column(col, justify="right")
    for r in result["table"]:
        table.add_row(
            r["shape"],
            f"{r['p50_ms']:.2f}",
            f"{r['p95_ms']:.2f}",
            f"{r['seq_s']:,.0f} ({r['in_flight']})",
            f"{r['tokens_s']:,}",
            f"{r['old_p50_ms']:.2f}",
            f"{r['old_seq_s']:,.1f}",
            f"{r['ratio']:.1f}x",
        )
    console = Console(width=140)
    console.print(table)
    for name, t in result["targets"].items():
        console.print(
            f"{name}: {t['got']} (target {t['target']}) {'MET' if t['met'] else 'MISSED'}"
        )
    for v in result["variants"][1:]:
        s = result["served"][v["name"]]
        best = {k: max(x["seq_s"] for x in p["sweep"]) for k, p in s.items() if p["sweep"]}
        lat = {k: p["one_at_a_time"]["p50_ms"] for k, p in s.items() if p["one_at_a_time"]}
        console.print(f"variant {v['name']} {v['overrides']}: p50 {lat} seq/s {best}")
    for name, check in result.get("parity", {}).items():
        console.print(f"parity {name}: {check}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model: CPU rehearsal")
    ap.add_argument(
        "--variant", action="append", default=[], help="NAME[:field=value,param.P=value,...]"
    )
    ap.add_argument("--seconds", type=float, default=2.0, help="measured time per level")
    ap.add_argument("--warm", type=float, default=0.5, help="unmeasured time per level")
    ap.add_argument("--requests", type=int, default=100, help="one-at-a-time requests")
    ap.add_argument("--processes", type=int, default=8, help="client processes")
    ap.add_argument("--load-timeout", type=float, default=400)
    ap.add_argument(
        "--log", type=Path, default=None, help="tritonserver's log (default: beside --out)"
    )
    args = ap.parse_args()

    import torch

    on_gpu = torch.cuda.is_available()
    device = "cuda:0" if on_gpu else "cpu"
    variants = [Variant.parse(v) for v in args.variant] or [Variant("roberta-large")]
    from conversion.convert import Target

    known = {f.name for f in fields(Target)}
    for v in variants:
        if unknown := {k for k in v.overrides if not k.startswith(PARAM)} - known:
            raise SystemExit(f"variant {v.name}: no Target field {sorted(unknown)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="docq-serve-"))
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": torch.cuda.get_device_name(0) if on_gpu else "CPU (rehearsal)",
        "torch": torch.__version__,
        "variants": [{"name": v.name, "overrides": v.overrides} for v in variants],
        "settings": {
            "seconds": args.seconds,
            "warm": args.warm,
            "requests": args.requests,
            "processes": args.processes,
        },
    }
    t = time.perf_counter()
    result["model"] = build_checkpoint(work / "checkpoint", args.tiny, device)
    result["build_s"] = round(time.perf_counter() - t, 1)
    print(f"model built in {result['build_s']} s: {result['model']}", flush=True)
    result["old_runtime"] = old_runtime(work / "checkpoint", device, 20 if on_gpu else 5)
    reference = result["old_runtime"].pop("parity_reference")
    print(f"old runtime: { {k: v['p50_ms'] for k, v in result['old_runtime'].items()} }")
    repo = work / "repo"
    result["configs"] = {}
    from google.protobuf import json_format

    for v in variants:
        config = publish_variant(repo, work / "checkpoint", v, on_gpu)
        result["configs"][v.name] = json_format.MessageToDict(config)
    log = args.log or args.out.with_name("triton.log")
    names = [v.name for v in variants]
    t = time.perf_counter()
    proc, url = start_server(repo, names, log)
    load = Load(args.processes)
    try:
        wait_ready(proc, url, names, args.load_timeout)
        result["server_ready_s"] = round(time.perf_counter() - t, 1)
        print(f"tritonserver ready in {result['server_ready_s']} s", flush=True)
        result["served"] = {}
        for i, v in enumerate(variants):
            shapes = SHAPES if i == 0 else VARIANT_SHAPES
            served: dict[str, Any] = {}
            for shape in shapes:
                entry: dict[str, Any] = {
                    "one_at_a_time": one_at_a_time(url, v.name, shape, args.requests)
                    if i == 0 or shape[0] == 1
                    else None,
                    "sweep": [],
                }
                if i == 0 or shape[0] > 1:
                    levels = IN_FLIGHT if i == 0 else [8, 16, 32, 64]
                    # multi-row shapes of the default: every level (the batches grow late)
                    entry["sweep"] = sweep(
                        load,
                        url,
                        v.name,
                        shape,
                        levels,
                        args.warm,
                        args.seconds,
                        early_stop=i > 0 or shape[0] == 1,
                    )
                served[key(shape)] = entry
                print(f"{v.name} {shape}: {entry['one_at_a_time']}"[:200], flush=True)
            result.setdefault("parity", {})[v.name] = parity(url, v.name, reference)
            print(f"{v.name} parity: {result['parity'][v.name]}", flush=True)
            served_stats = batch_stats(url, v.name)
            result["served"][v.name] = served
            result.setdefault("batch_sizes", {})[v.name] = served_stats
    finally:
        load.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    result["table"] = summarise(result)
    result["targets"] = targets(result["table"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    show(result)


if __name__ == "__main__":
    main()
