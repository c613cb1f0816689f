"""The old architecture, rebuilt for the benchmark only: FastAPI + PyTorch FP32 in-process.

What docq replaced: every Gunicorn/Uvicorn worker loads its own copy of the model, and a
client sends one synchronous request per document. The document's windows run as one
batch at their own length (no batching across documents, no queue in front). Run with

    gunicorn bench.baseline.app:app -k uvicorn_worker.UvicornWorker -w 2 -b 127.0.0.1:9090

`BASELINE_CHECKPOINT` names the Hugging Face checkpoint (default: the demo model's, built
by `python -m conversion.demo` into build/doc-type/checkpoint); `BASELINE_DEVICE` the torch
device (default `cpu`; `cuda` for the old service on a GPU, bench/gpu/pipeline.py: every
worker then holds its own FP32 copy in GPU memory). This module is not part of docq and
reads its environment directly for that reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertForSequenceClassification

from docq.text.aggregation import aggregate
from docq.text.packing import pad
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import split

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINT = Path(os.environ.get("BASELINE_CHECKPOINT", ROOT / "build" / "doc-type" / "checkpoint"))
DEVICE = os.environ.get("BASELINE_DEVICE", "cpu")

# Loaded at import: each Gunicorn worker holds its own copy, as the old service did.
tokenizer = load_tokenizer(CHECKPOINT)
model = BertForSequenceClassification.from_pretrained(CHECKPOINT, dtype=torch.float32)
model = model.to(DEVICE).eval()
labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
spec = window_spec(tokenizer, 512, 64)

app = FastAPI(title="old architecture (benchmark baseline)")


class Document(BaseModel):
    id: str
    text: str


@app.post("/classify")
def classify(doc: Document) -> dict[str, object]:
    """Classify one document synchronously: all its windows in one batch, FP32 eager."""
    windows = split(0, tokenize(tokenizer, [doc.text])[0], spec)
    ids, mask = pad(windows)
    with torch.inference_mode():
        out = model(
            input_ids=torch.from_numpy(ids).to(DEVICE),
            attention_mask=torch.from_numpy(mask).to(DEVICE),
        )
        logits = out.logits.cpu().numpy()
    p = aggregate(logits, [w.length for w in windows], labels)
    return {"id": doc.id, "label": p.label, "scores": p.scores, "windows": p.windows}


class Documents(BaseModel):
    documents: list[Document]


@app.post("/classify/batch")
def classify_batch(body: Documents) -> list[dict[str, object]]:
    """The old service's bulk call: every document in turn, one answer when all are done
    (what timed out when customers uploaded many long documents at once)."""
    return [classify(doc) for doc in body.documents]
