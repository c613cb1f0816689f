"""Lay out a model folder of the Triton model repository and publish its version atomically.

Committed files (config.pbtxt, labels.txt, tokenizer/) are written byte-identically on
every build. The version folder is assembled under a non-numeric name, which Triton
ignores, and renamed into place, so a polling server never loads half a model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from conversion import pbtxt
from docq.text.tokens import tokenizer_files


def write_metadata(
    model_dir: Path, config: mc.ModelConfig, labels: Sequence[str], tokenizer_src: Path
) -> None:
    """config.pbtxt, labels.txt (one label per line, logit order) and tokenizer/: the
    tokenizer files of `tokenizer_src` as its save_pretrained wrote them, and no others."""
    model_dir.mkdir(parents=True, exist_ok=True)
    pbtxt.write(config, model_dir / "config.pbtxt")
    (model_dir / "labels.txt").write_text(
        "".join(f"{label}\n" for label in labels), encoding="utf-8"
    )
    tokenizer_dir = model_dir / "tokenizer"
    tokenizer_dir.mkdir(exist_ok=True)
    names = tokenizer_files(tokenizer_src)
    for name in names:
        shutil.copyfile(tokenizer_src / name, tokenizer_dir / name)
    for stale in tokenizer_dir.iterdir():  # another tokenizer's files would mislead AutoTokenizer
        if stale.name not in names:
            stale.unlink()


def publish_version(model_dir: Path, version: int, fill: Callable[[Path], None]) -> Path:
    """Build version `version` by calling `fill(tmp_dir)`, then swap it in with renames."""
    target = model_dir / str(version)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=model_dir))
    try:
        fill(tmp)
        for path in tmp.iterdir():  # a folder (the runtime's package) must stay traversable
            path.chmod(0o755 if path.is_dir() else 0o644)
        tmp.chmod(0o755)
        if target.exists():
            # rename() cannot replace a non-empty folder: move the old one aside first (one
            # rename, so the version is missing only between two renames), then delete it.
            old = model_dir / f".old-{version}-{os.getpid()}"
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old)
        else:
            os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
