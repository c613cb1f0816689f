"""The gate's two checkpoints in parts small enough to ride with other device calls.

Pruned (conversion.prune), doc-type weighs 52 MB and doc-lang 51 MB, and a call carries 64
MiB with the working tree (10 MB) and .devpack (about 20 MB): neither fits beside the
packages the gate needs. But the two share the frozen MiniLM layers 0-4 (36 MB): doc-lang
travels without the tensors it shares, byte for byte, with doc-type (`shared.json` names
them), and the two folders travel as one tar cut in two: part-1 (FIRST_MIB) rides alone
with the GPU tests, part-2 (about 10 MiB) beside the server and packages with the gate
(bench/gpu/device-plan.sh). The first part waits in /tmp of the machine, so the gate's call
must follow while it stays warm: a part missing is said plainly, nothing half-run.
"""

from __future__ import annotations

import json
import lzma
import shutil
import tarfile
from pathlib import Path

# The first part rides alone with the GPU tests (no .devpack: the working tree, ~10 MiB,
# and this); the second beside tritonserver and the packages (~38 MiB) with the gate.
FIRST_MIB = 49
SHARED = "shared.json"
PIECE = "gate.tar.xz"  # the tar, xz'd (8% smaller: the weights are FP32), then cut


def dedupe(base: Path, other: Path) -> int:
    """Drop from other/pruned.safetensors every tensor equal to base's; list them in
    other/shared.json. Returns the bytes saved."""
    import torch
    from safetensors.torch import load_file, save_file

    mine, theirs = (
        load_file(str(other / "pruned.safetensors")),
        load_file(str(base / "pruned.safetensors")),
    )
    shared = sorted(
        k
        for k, v in mine.items()
        if not k.startswith("__")
        and k in theirs
        and theirs[k].shape == v.shape
        and torch.equal(theirs[k], v)
    )
    saved = sum(mine[k].numel() * mine[k].element_size() for k in shared)
    save_file({k: v for k, v in mine.items() if k not in shared}, str(other / "pruned.safetensors"))
    (other / SHARED).write_text(json.dumps({"from": base.name, "tensors": shared}))
    return saved


def undedupe(base: Path, other: Path) -> None:
    """Put back into other/pruned.safetensors the tensors it shares with base's."""
    from safetensors.torch import load_file, save_file

    listed = other / SHARED
    if not listed.exists():
        return
    names = json.loads(listed.read_text())["tensors"]
    theirs = load_file(str(base / "pruned.safetensors"))
    mine = load_file(str(other / "pruned.safetensors")) | {k: theirs[k] for k in names}
    save_file(mine, str(other / "pruned.safetensors"))
    listed.unlink()


def split(root: Path, folders: list[str], first_bytes: int = FIRST_MIB * 2**20) -> list[Path]:
    """root/part-1, part-2: a tar of root/<folders> cut after `first_bytes`, the rest in
    pieces of at most that size."""
    whole = root / "gate.tar"
    with tarfile.open(whole, "w") as tar:
        for name in folders:
            tar.add(root / name, arcname=name)
    data = lzma.compress(whole.read_bytes())
    whole.unlink()
    size = first_bytes
    parts = -(-len(data) // size)
    for stale in root.glob("part-*"):  # an earlier pack's parts would ride along otherwise
        shutil.rmtree(stale)
    out = []
    for i in range(parts):
        folder = root / f"part-{i + 1}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        piece = folder / f"{PIECE}.{i + 1}-of-{parts}"
        piece.write_bytes(data[i * size : (i + 1) * size])
        out.append(piece)
    return out


def keep(stash: Path, piece: Path) -> None:
    """Stash one piece; pieces of another pack (another count of parts) go."""
    parts = stash / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    total = piece.name.rsplit("-of-", 1)[1]
    for old in parts.glob(f"{PIECE}.*-of-*"):
        if old.name.rsplit("-of-", 1)[1] != total:
            old.unlink()
    shutil.copyfile(piece, parts / piece.name)


def join(stash: Path) -> list[str]:
    """Rebuild stash/<model>/ from the parts stashed in stash/parts; what is missing, if
    any (nothing is unpacked then)."""
    pieces = sorted((stash / "parts").glob(f"{PIECE}.*-of-*"))
    if not pieces:
        return ["no part stashed"]
    total = int(pieces[0].name.rsplit("-of-", 1)[1])
    have = {int(p.name.split(".")[-1].split("-of-")[0]) for p in pieces}
    missing = [f"part {i} of {total}" for i in range(1, total + 1) if i not in have]
    if missing:
        return missing
    whole = stash / "gate.tar"
    data = b"".join(
        (stash / "parts" / f"{PIECE}.{i}-of-{total}").read_bytes() for i in range(1, total + 1)
    )
    whole.write_bytes(lzma.decompress(data))
    with tarfile.open(whole) as tar:
        tar.extractall(stash, filter="data")
    whole.unlink()
    for folder in stash.iterdir():
        if (folder / SHARED).exists():
            base = json.loads((folder / SHARED).read_text())["from"]
            undedupe(stash / base, folder)
    return []
