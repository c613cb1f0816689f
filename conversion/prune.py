"""Ship a checkpoint for one document set: keep only the embedding rows those documents use.

A parity run on a GPU host needs the exact FP32 weights, and the way there carries less
than the doc-type checkpoint weighs (90 MB, half of it the 30,522-row word-embedding
matrix). Rows of tokens that never occur in the documents are never read, so zeroing
them changes no logit of those documents; `prune` keeps the used rows, `restore` rebuilds
a full checkpoint with the other rows set to NaN. Only for the documents the ids came
from: any other token turns its window's logits into NaN, which the parity report
refuses, so a mismatch cannot go unnoticed.

    python -m conversion.prune build/doc-type/checkpoint --corpus doc-type --n 10000 \\
        --seed 4004 --out .parity/doc-type.pruned.safetensors
    python -m conversion.prune --restore .parity/doc-type.pruned.safetensors \\
        --config build/doc-type/checkpoint --out /tmp/doc-type-ckpt
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Iterable
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from docq.text.tokens import TOKENIZER_FILES

EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
_ROWS, _IDS = "__pruned_rows__", "__pruned_ids__"


def prune(checkpoint: Path, ids: Iterable[int], out: Path) -> Path:
    """Write the checkpoint's tensors with only the embedding rows of `ids`."""
    tensors = load_file(str(checkpoint / "model.safetensors"))
    keep = torch.tensor(sorted(set(ids)), dtype=torch.int64)
    embeddings = tensors.pop(EMBEDDINGS)
    tensors[_IDS] = keep
    tensors[_ROWS] = embeddings[keep].contiguous()
    tensors["__vocab_size__"] = torch.tensor([embeddings.shape[0]], dtype=torch.int64)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out))
    return out


def restore(pruned: Path, config_dir: Path, out: Path, fill: str = "nan") -> Path:
    """A full checkpoint directory (config, tokenizer, weights) from a pruned file; the rows
    not kept are NaN, or zero (`fill="zero"`) for a tool that feeds random tokens."""
    tensors = load_file(str(pruned))
    keep, rows = tensors.pop(_IDS), tensors.pop(_ROWS)
    vocab = int(tensors.pop("__vocab_size__")[0])
    value = {"nan": float("nan"), "zero": 0.0}[fill]
    embeddings = torch.full((vocab, rows.shape[1]), value, dtype=rows.dtype)
    embeddings[keep] = rows
    tensors[EMBEDDINGS] = embeddings
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    for name in ("config.json", *TOKENIZER_FILES):
        if (config_dir / name).exists():
            shutil.copyfile(config_dir / name, out / name)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m conversion.prune", description=__doc__)
    parser.add_argument("checkpoint", type=Path, nargs="?")
    parser.add_argument("--corpus", default="doc-type")
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=4004)
    parser.add_argument("--restore", type=Path, help="a pruned file to rebuild")
    parser.add_argument("--config", type=Path, help="with --restore: config.json + tokenizer")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.restore:
        print(restore(args.restore, args.config, args.out))
        return
    from conversion.parity import synthetic
    from docq.text.tokenizing import load_tokenizer, tokenize

    tokenizer = load_tokenizer(args.checkpoint)
    docs = synthetic(args.corpus, args.n, args.seed)
    ids = {i for doc in tokenize(tokenizer, [d.text for d in docs]) for i in doc}
    ids |= {int(t) for t in tokenizer.all_special_ids}
    prune(args.checkpoint, ids, args.out)
    print(f"{args.out}: {len(ids)} of {tokenizer.vocab_size} embedding rows kept")


if __name__ == "__main__":
    main()
