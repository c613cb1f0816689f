"""Where the FP8 engine's error comes from, on the demo models: weights or activations,
which product, and whether smoothing outlier channels (SmoothQuant) removes it.

The torch-gpu runtime's flat engine on a CPU, `dtype: fp8` (bench/fp8_recipes.py), with its
rounding taken apart: every FP8 product receives its input unrounded and rounds here what
the arm asks for, with the runtime's own scales (weights per output channel, activations
per token, e4m3):

- `all`: weights and activations (what the runtime serves);
- `weights`: weights only, activations exact;
- `activations`, `activations:qkv|out|up|down`: activations only (of every product, or of
  one), weights exact;
- `bias-corrected`: both, each product's bias corrected for its rounded weights' mean
  effect, b + (W - W8) mean(x) (Nagel et al. 2019, "Data-Free Quantization"; mean(x) per
  input channel, calibrated as smooth's amax is): free at inference;
- `smooth:ALPHA`: both, after SmoothQuant's per-input-channel migration (activation channel
  j divided by s_j, weight column j multiplied by it, s_j = amax(x_j)^a / amax(W_j)^(1-a),
  amax calibrated on `--calibration` documents of the model's own corpus, another seed).

Each arm against the FP32 checkpoint through the gate's comparison (conversion.parity).

    .venv/bin/python -m bench.fp8_error --n 100 --out bench/fp8-error-cpu-2026-12-02.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from bench.fp8_recipes import MODELS, RUNTIME, runner
from conversion.parity import cached, compare, synthetic, torch_runner, window_logits, windows_of
from docq.text.tokenizing import window_spec
from serving import pb_stub

ARMS = (
    "all", "weights", "activations", "activations:qkv", "activations:out", "activations:up",
    "activations:down", "smooth:0.5", "smooth:0.8", "bias-corrected",
)  # fmt: skip


def take_apart(flat: Any, arm: str) -> dict[str, Any]:
    """Patch the runtime's flat module so that its FP8 products round as `arm` says; the
    returned state collects calibration amax while state["calibrating"] is set."""
    state: dict[str, Any] = {"calibrating": False}
    rows = flat.quantize_rows
    init = flat.Linear.__init__

    def linear_init(
        self: Any, weight: torch.Tensor, bias: torch.Tensor, dtype: Any, fp8: bool
    ) -> None:
        init(self, weight, bias, dtype, fp8)
        self.w32, self.amax, self.smooth = weight.detach().float(), None, None
        self.sum, self.count, self.correction = None, 0, None

    def rounded(t: torch.Tensor) -> torch.Tensor:
        q, scale = rows(t)
        return q.float() * scale

    def scaled(self: Any, x: torch.Tensor, _scale: torch.Tensor, bias: bool = True) -> torch.Tensor:
        x, w = x.float(), self.w32
        if state["calibrating"]:
            a = x.abs().amax(0)
            self.amax = a if self.amax is None else torch.maximum(self.amax, a)
            total = x.sum(0)
            self.sum = total if self.sum is None else self.sum + total
            self.count += x.shape[0]
        elif arm.startswith("smooth:"):
            x, w = rounded(x / self.smooth), rounded(w * self.smooth)
        else:
            if arm in ("all", "activations", f"activations:{self.product}", "bias-corrected"):
                x = rounded(x)
            if arm in ("all", "weights", "bias-corrected"):
                w = rounded(w)
        out = x @ w.t()
        if self.correction is not None and not state["calibrating"]:
            out = out + self.correction
        b = self.bias if bias else None
        return (out + b.float() if b is not None else out).to(torch.bfloat16)

    state["rounded"] = rounded
    flat.Linear.__init__ = linear_init
    flat.Linear.scaled = scaled
    # The producers (LayerNorm, GELU, attention's output) hand their rows on unrounded.
    flat.quantize_rows = lambda t: (t.float(), torch.ones((t.shape[0], 1)))
    return state


def measure(name: str, arm: str, n: int, seed: int, calibration: int) -> dict[str, Any]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    checkpoint = Path("build") / name / "checkpoint"
    model = AutoModelForSequenceClassification.from_pretrained(str(checkpoint), dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    runtime = pb_stub.load_runtime(RUNTIME)  # a fresh module: the patches are this arm's
    state = take_apart(runtime.flat, arm)
    served = pb_stub.instance(runtime, checkpoint, "CPU", 64, max_seq_len="512", dtype="fp8")
    for layer in served.flat.layers:
        for product in ("qkv", "out", "up", "down"):
            getattr(layer, product).product = product
    run = runner(served)
    if arm.startswith("smooth:") or arm == "bias-corrected":
        spec = window_spec(tokenizer, 512, 64)
        cal = synthetic(name, calibration, seed + 1)
        state["calibrating"] = True
        window_logits(
            run, [w for ws in windows_of(tokenizer, [d.text for d in cal], spec) for w in ws], 64
        )
        state["calibrating"] = False
        for layer in served.flat.layers:
            for product in ("qkv", "out", "up", "down"):
                lin = getattr(layer, product)
                if arm == "bias-corrected":
                    mean = lin.sum / lin.count
                    lin.correction = (lin.w32 - state["rounded"](lin.w32)) @ mean
                    continue
                alpha = float(arm.partition(":")[2])
                w_amax = lin.w32.abs().amax(0).clamp(min=1e-5)
                lin.smooth = (lin.amax.clamp(min=1e-5) ** alpha / w_amax ** (1 - alpha)).clamp(
                    min=1e-5
                )
    start = time.perf_counter()
    report = compare(cached(torch_runner(model)), run, synthetic(name, n, seed), labels,
                     tokenizer, names=("fp32", arm))  # fmt: skip
    return {
        "agreement": report.agreement,
        "accuracy_diff_pt": report.accuracy_diff_pt,
        "mean_abs_logit_diff": report.mean_abs_logit_diff,
        "max_abs_logit_diff": report.max_abs_logit_diff,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="documents per model")
    ap.add_argument("--seed", type=int, default=4004)
    ap.add_argument("--calibration", type=int, default=32, help="documents, for smooth:")
    ap.add_argument("--arm", action="append", choices=ARMS, default=None)
    ap.add_argument("--model", action="append", choices=MODELS, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    result: dict[str, Any] = {"torch": torch.__version__, "n": args.n, "models": {}}
    for name in args.model or MODELS:
        result["models"][name] = {}
        for arm in args.arm or ARMS:
            result["models"][name][arm] = measure(name, arm, args.n, args.seed, args.calibration)
            print(name, arm, result["models"][name][arm], flush=True)
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    table = Table(title=f"FP8 rounding taken apart, {args.n} documents per model, CPU")
    for col in ("model", "arm", "agreement", "accuracy diff (pt)", "mean |logit diff|"):
        table.add_column(col)
    for name, arms in result["models"].items():
        for arm, r in arms.items():
            table.add_row(name, arm, f"{r['agreement']:.2%}", f"{r['accuracy_diff_pt']:+.2f}",
                          f"{r['mean_abs_logit_diff']:.4f}")  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
