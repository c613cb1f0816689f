"""Which FP8 recipe can pass the parity gate: each demo model through the torch-gpu
runtime's flat engine with a choice of products in FP8, against the FP32 checkpoint.

The runtime itself (serving/runtimes/torch_gpu.py, through serving.pb_stub) serves each
recipe, with `dtype: fp8` and `fp8_products`; on a CPU its FP8 is emulated (weights and
activations rounded to float8 e4m3 with the same per-channel / per-token scales, products in
float32), so a recipe the gate refuses here is refused for its rounding, not its kernels.
The comparison is the gate's own (`conversion.parity.compare`: documents through the
serving path's windowing and aggregation). A CPU run is a screen on fewer documents; the
verdict is `bench.gpu.parity` on 10,000 documents on the GPU.

    .venv/bin/python -m bench.fp8_recipes --n 300 --out bench/fp8-recipes-cpu-2026-12-02.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from conversion.parity import cached, compare, synthetic, torch_runner
from serving import pb_stub

RUNTIME = Path(__file__).resolve().parents[1] / "serving" / "runtimes" / "torch_gpu.py"
MODELS = ("doc-type", "doc-lang")
RECIPES = {  # name -> fp8_products ("" = FP16, no FP8 at all)
    "fp16": "",
    "fp8-all": "all",
    "fp8-no-down": "qkv+out+up",
    "fp8-qkv-up": "qkv+up",
    "fp8-no-qkv": "out+up+down",
}


def runner(model: Any) -> Any:
    """A parity Runner over a TritonPythonModel: padded (ids, mask) batches in, logits out."""

    def run(batch: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        ids, mask = batch
        (out,) = pb_stub.answers(model, [pb_stub.request(ids, mask)])
        return np.asarray(out.output_tensors[0].array, dtype=np.float32)

    return run


def screen(name: str, n: int, seed: int, recipes: list[str]) -> dict[str, Any]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    checkpoint = Path("build") / name / "checkpoint"
    model = AutoModelForSequenceClassification.from_pretrained(str(checkpoint), dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    docs = synthetic(name, n, seed)
    reference = cached(torch_runner(model))
    runtime = pb_stub.load_runtime(RUNTIME)
    out: dict[str, Any] = {}
    for recipe in recipes:
        products = RECIPES[recipe]
        params = {"dtype": "fp8", "fp8_products": products} if products else {}
        served = pb_stub.instance(runtime, checkpoint, "CPU", 64, max_seq_len="512", **params)
        start = time.perf_counter()
        report = compare(reference, runner(served), docs, labels, tokenizer, names=("fp32", recipe))
        out[recipe] = {
            "fp8_products": products or None,
            "documents": report.documents,
            "agreement": report.agreement,
            "accuracy_diff_pt": report.accuracy_diff_pt,
            "mean_abs_logit_diff": report.mean_abs_logit_diff,
            "max_abs_logit_diff": report.max_abs_logit_diff,
            "passed": report.passed,
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(name, recipe, out[recipe], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="documents per model")
    ap.add_argument("--seed", type=int, default=4004)
    ap.add_argument("--recipe", action="append", choices=sorted(RECIPES), default=None)
    ap.add_argument("--model", action="append", choices=MODELS, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    recipes = args.recipe or list(RECIPES)
    result = {
        "device": "CPU (FP8 emulated)" if not torch.cuda.is_available() else "GPU",
        "torch": torch.__version__,
        "command": "python -m bench.fp8_recipes",
        "models": {m: screen(m, args.n, args.seed, recipes) for m in args.model or MODELS},
    }
    table = Table(title=f"FP8 recipes against FP32, {args.n} documents per model")
    for col in ("model", "recipe", "agreement", "accuracy diff (pt)", "mean |logit diff|", "gate"):
        table.add_column(col)
    for m, rows in result["models"].items():
        for recipe, r in rows.items():
            table.add_row(
                m, recipe, f"{r['agreement']:.2%}", f"{r['accuracy_diff_pt']:+.2f}",
                f"{r['mean_abs_logit_diff']:.4f}", "pass" if r["passed"] else "refused",
            )  # fmt: skip
    Console().print(table)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
