"""In-process speed of the torch-gpu runtime's engines on one GPU, RoBERTa-large shape.

Runs the runtime's own TritonPythonModel (serving/runtimes/torch_gpu.py through
serving.pb_stub) on (64, 512) full rows and (64, 512) with each 7th row 60% long, for
the padded transformers engine (hf) and the flat engine in FP16 (erf, tanh GELU, tanh with
cuDNN attention, and with docq's GEMM) and FP8;
median of `--repeat` calls, seq/s and real tokens/s, and each variant's max |logit diff|
and label agreement against FP32 (TF32 off) on the same batch.

    PYTHONPATH=. python3 -m bench.gpu.flat_speed --out $OUT/flat-speed.json
    PYTHONPATH=. python3 -m bench.gpu.flat_speed --profile --variant flat-fp16-tanh ...
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.gpu.gaps import gap_profile
from bench.gpu.model import build_checkpoint
from bench.gpu.profile import cuda_ms, kernel_profile, wall_ms
from bench.gpu.shapes import windows
from serving import pb_stub

RUNTIME = Path(__file__).resolve().parents[2] / "serving" / "runtimes" / "torch_gpu.py"
VARIANTS = {
    "hf-fp16": {"engine": "hf"},
    "flat-fp16": {},
    "flat-fp16-tanh": {"gelu": "tanh"},
    "flat-fp16-tanh-cudnn": {"gelu": "tanh", "attention": "cudnn"},
    # docq's persistent GEMM where plan_gemms finds it faster than cuBLAS (the log says which)
    "flat-fp16-tanh-cudnn-gemm": {"gelu": "tanh", "attention": "cudnn", "gemm": "triton"},
    "flat-fp8": {"dtype": "fp8"},
}


def batches() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    full = [windows(7, 512, i) for i in range(9)]  # 63 rows
    partial = [windows(7, 512, i, 0.6) for i in range(9)]
    return {"63x512": full, "63x512p": partial, "1x512": [windows(1, 512, 0)]}


def host_breakdown(model: Any, requests: list[dict[str, np.ndarray]], repeat: int) -> dict:
    """Where a small call's wall time goes, part by part (median ms): the whole execute();
    the run on the batch already read and flattened; the graph call (staging, replay, copy
    back); the replay alone with a synchronisation; the replay's GPU time (CUDA events).
    Each difference is host time that the GPU waits for."""
    loop = model.execute.__func__.__globals__["execute"]  # docq_execute's, as the model bound it
    lengths = loop.__globals__["lengths"]
    pairs = [(r["input_ids"], lengths(r["attention_mask"])) for r in requests]
    batch, _ = loop.__globals__["flatten"](pairs)
    flat = model.execute.__func__.__globals__["flat"]  # the runtime's docq_flat
    pos = flat.positions(model.flat_config, batch.ids, batch.cu)
    graphs = model.graphs
    graph, _ = graphs.graphs[graphs.graph_for(int(batch.cu[-1]), batch.windows)]

    def replay() -> None:
        graph.replay()
        torch.cuda.synchronize()

    return {
        "execute_ms": wall_ms(lambda: pb_stub.answers(model, requests), repeat),
        "run_flat_ms": wall_ms(lambda: model._run_flat(batch), repeat),
        "graph_call_ms": wall_ms(lambda: graphs(batch, pos), repeat),
        "replay_sync_ms": wall_ms(replay, repeat),
        "replay_gpu_ms": cuda_ms(graph.replay, repeat),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                    help="only these (default: all)")  # fmt: skip
    ap.add_argument("--profile", action="store_true",
                    help="GPU time by kernel, idle by host op: 63x512, 1x512")  # fmt: skip
    args = ap.parse_args()
    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    kind = "GPU" if device != "cpu" else "CPU"
    work = Path(tempfile.mkdtemp()) / "m" / "1"
    build_checkpoint(work, args.tiny, device)
    runtime = pb_stub.load_runtime(RUNTIME)
    from transformers import AutoModelForSequenceClassification

    torch.backends.cuda.matmul.allow_tf32 = False
    ref_model = (  # FP32: from_pretrained would keep the checkpoint's saved FP16
        AutoModelForSequenceClassification.from_pretrained(str(work), dtype=torch.float32)
        .to(device)
        .eval()
    )
    inputs = batches()
    reference = {}
    with torch.inference_mode():
        for name, reqs in inputs.items():
            reference[name] = [
                ref_model(input_ids=torch.from_numpy(i).to(device),
                          attention_mask=torch.from_numpy(m).to(device)).logits.float().cpu().numpy()
                for i, m in reqs
            ]  # fmt: skip
    del ref_model
    torch.cuda.empty_cache() if device != "cpu" else None
    result: dict = {"device": torch.cuda.get_device_name(0) if kind == "GPU" else "CPU",
                    "torch": torch.__version__, "variants": {}}  # fmt: skip
    for vname, params in VARIANTS.items():
        if (kind == "CPU" and "tanh" in vname) or (args.variant and vname not in args.variant):
            continue
        try:
            # in-process the engine is timed call by call: no responder thread
            engine = {"overlap": "false", **params}
            model = pb_stub.instance(runtime, work, kind, 64, max_seq_len="512", **engine)
        except RuntimeError as exc:  # a variant that cannot load is a result, not the end
            result["variants"][vname] = {"error": str(exc).splitlines()[0][:300]}
            print(vname, result["variants"][vname], flush=True)
            continue
        entry: dict = {}
        if model.flat is not None:
            entry["attention"] = {"kernel": model.flat.attention, "note": model.flat.attention_note}
        for name, reqs in inputs.items():
            requests = [pb_stub.request(i, m) for i, m in reqs]
            outs = pb_stub.answers(model, requests)
            got = np.concatenate([o.output_tensors[0].array for o in outs])
            ref = np.concatenate(reference[name])
            times = []
            for _ in range(3 if kind == "GPU" else 0):
                pb_stub.answers(model, requests)
            for _ in range(args.repeat if kind == "GPU" else 1):
                t = time.perf_counter()
                pb_stub.answers(model, requests)
                times.append(time.perf_counter() - t)
            p50 = statistics.median(times)
            tokens = sum(int(m.sum()) for _, m in reqs)
            entry[name] = {
                "ms": round(p50 * 1000, 3), "seq_s": round(len(ref) / p50, 1),
                "tokens_s": round(tokens / p50), "max_abs_diff": float(np.abs(got - ref).max()),
                "label_agreement": float((got.argmax(1) == ref.argmax(1)).mean()),
            }  # fmt: skip
            print(vname, name, entry[name], flush=True)
            if args.profile and kind == "GPU" and name in ("63x512", "1x512"):
                profiled = kernel_profile(functools.partial(model.execute, requests))
                profiled["host_gaps"] = gap_profile(functools.partial(model.execute, requests))
                entry[f"profile_{name}"] = profiled
                print(vname, "profile", name, profiled, flush=True)
            if args.profile and kind == "GPU" and name == "1x512" and model.graphs is not None:
                try:
                    entry["host_1x512"] = host_breakdown(model, requests, 4 * args.repeat)
                except Exception as exc:  # a breakdown that cannot be taken is reported
                    entry["host_1x512"] = {"error": repr(exc)[:300]}
                print(vname, "host", name, entry["host_1x512"], flush=True)
        result["variants"][vname] = entry
        del model
        torch.cuda.empty_cache() if device != "cpu" else None
        args.out.write_text(json.dumps(result, indent=1) + "\n")  # what is done so far


if __name__ == "__main__":
    main()
