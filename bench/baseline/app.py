"""The old architecture, rebuilt for the benchmark only: FastAPI + PyTorch FP32 in-process.

What docq replaced: every Gunicorn/Uvicorn worker loads its own copy of the model, and a
client sends one synchronous request per document. The document's windows run as one
batch padded to the document's own longest window (no batching across documents, no
queue in front). Run with

    BASELINE_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        gunicorn bench.baseline.app:app -k uvicorn_worker.UvicornWorker -w 2 -b 127.0.0.1:9090

Tuned as a careful operator would tune it (bench/pipeline.py sweeps the worker count):
each worker runs `BASELINE_THREADS` torch threads (workers x threads = cores; the bench
also sets OMP_NUM_THREADS and MKL_NUM_THREADS to the same number), and runs one model call
at a time. FastAPI runs a sync endpoint in a thread pool, so without the lock two requests
in one worker would run two thread teams on the same cores: oversubscription, the untuned
baseline's flaw. Requests still overlap their tokenizing and HTTP handling with the model.

`BASELINE_CHECKPOINT` names the Hugging Face checkpoint (default: the demo model's, built
by `python -m conversion.demo` into build/doc-type/checkpoint); `BASELINE_DEVICE` the torch
device (default `cpu`; `cuda` for the old service on a GPU, bench/gpu/pipeline.py: every
worker then holds its own copy in GPU memory); `BASELINE_PRECISION` `fp32` (the old
service as it ran; TF32 off, PyTorch's default) or `fp16` (what a skeptic would try first:
`model.half()`, SDPA attention, the logits cast back to FP32 before aggregating). This
module is not part of docq and reads its environment directly for that reason.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import AutoModelForSequenceClassification

from docq.text.aggregation import aggregate
from docq.text.packing import pad
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import split

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINT = Path(os.environ.get("BASELINE_CHECKPOINT", ROOT / "build" / "doc-type" / "checkpoint"))
DEVICE = os.environ.get("BASELINE_DEVICE", "cpu")
THREADS = int(os.environ.get("BASELINE_THREADS", "0"))  # 0: torch's own default
PRECISION = os.environ.get("BASELINE_PRECISION", "fp32")
if PRECISION not in ("fp32", "fp16"):
    raise SystemExit(f"BASELINE_PRECISION must be fp32 or fp16, not {PRECISION!r}")

if THREADS:
    torch.set_num_threads(THREADS)
# Loaded at import: each Gunicorn worker holds its own copy, as the old service did.
tokenizer = load_tokenizer(CHECKPOINT)
model = AutoModelForSequenceClassification.from_pretrained(
    CHECKPOINT, dtype=torch.float32, attn_implementation="sdpa"
)
model = (model.half() if PRECISION == "fp16" else model).to(DEVICE).eval()
labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
spec = window_spec(tokenizer, 512, 64)
model_lock = threading.Lock()  # one model call at a time per worker (see above)

app = FastAPI(title="old architecture (benchmark baseline)")


class Document(BaseModel):
    id: str
    text: str


@app.post("/classify")
def classify(doc: Document) -> dict[str, object]:
    """Classify one document synchronously: all its windows in one batch, FP32 eager."""
    windows = split(0, tokenize(tokenizer, [doc.text])[0], spec)
    ids, mask = pad(windows)
    with model_lock, torch.inference_mode():
        out = model(
            input_ids=torch.from_numpy(ids).to(DEVICE),
            attention_mask=torch.from_numpy(mask).to(DEVICE),
        )
        logits = out.logits.float().cpu().numpy()
    p = aggregate(logits, [w.length for w in windows], labels)
    return {"id": doc.id, "label": p.label, "scores": p.scores, "windows": p.windows}


class Documents(BaseModel):
    documents: list[Document]


@app.post("/classify/batch")
def classify_batch(body: Documents) -> list[dict[str, object]]:
    """The old service's bulk call: every document in turn, one answer when all are done
    (what timed out when customers uploaded many long documents at once)."""
    return [classify(doc) for doc in body.documents]


@app.get("/threads")
def threads() -> dict[str, int | str]:
    """The worker's torch thread count, so the bench can check what it asked for."""
    return {"torch_threads": torch.get_num_threads(), "pid": os.getpid(), "precision": PRECISION}
