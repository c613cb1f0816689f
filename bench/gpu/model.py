"""The GPU bench's model: a random RoBERTa-large-shaped classifier published for Triton."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from docq.config import REPO_ROOT
from docq.text.tokenizing import load_tokenizer

DEMO_TOKENIZER = REPO_ROOT / "model_repository" / "doc-type" / "tokenizer"
MODEL = "roberta-large-doc"


def build_model(work: Path, tiny: bool, on_gpu: bool) -> tuple[Path, Path, dict[str, Any]]:
    """A random RoBERTa classifier of bench/gpu/serve.py's shape with the demo tokenizer's
    vocabulary, published as `docq convert --runtime torch-gpu` lays it out (serve.py's
    publish_variant) with the tokenizer beside it; (repository, checkpoint, facts)."""
    import torch
    from google.protobuf import json_format
    from transformers import AutoModelForSequenceClassification

    from bench.gpu import serve

    tok = load_tokenizer(DEMO_TOKENIZER)
    config = serve.roberta_config(tiny)
    # Real documents tokenize: the demo tokenizer's ids index the embeddings, its [PAD] is
    # the padding index RoBERTa derives position ids from.
    config.vocab_size = len(tok)
    config.pad_token_id = tok.pad_token_id
    config.bos_token_id, config.eos_token_id = tok.cls_token_id, tok.sep_token_id
    checkpoint = work / "checkpoint"
    torch.manual_seed(0)
    device = "cuda:0" if on_gpu else "cpu"
    with torch.device(device):
        model = AutoModelForSequenceClassification.from_config(
            config, dtype=torch.float16 if on_gpu else torch.float32
        )
    model.eval().save_pretrained(checkpoint, safe_serialization=True)
    del model
    for f in DEMO_TOKENIZER.iterdir():  # the old service loads its tokenizer from here
        shutil.copy2(f, checkpoint / f.name)
    repo = work / "repo"
    served = serve.publish_variant(repo, checkpoint, serve.Variant(MODEL), on_gpu)
    shutil.copytree(DEMO_TOKENIZER, repo / MODEL / "tokenizer")
    facts = {
        "name": MODEL,
        "layers": config.num_hidden_layers,
        "hidden": config.hidden_size,
        "heads": config.num_attention_heads,
        "vocab": config.vocab_size,
        "labels": list(serve.LABELS),
        "config": json_format.MessageToDict(served),
        "runtime_sha256": hashlib.sha256(
            (REPO_ROOT / "serving" / "runtimes" / "torch_gpu.py").read_bytes()
        ).hexdigest(),
    }
    return repo, checkpoint, facts
