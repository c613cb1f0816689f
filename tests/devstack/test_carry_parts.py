"""devstack/carry/parts.py: the gate's two checkpoints cut into parts a device call can carry,
and joined back whole."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from devstack.carry import parts


def test_the_models_travel_in_parts_and_come_back_whole(tmp_path: Path) -> None:
    root, stash = tmp_path / "parity", tmp_path / "stash"
    shared = torch.randn(64, 32)
    for name, own in (("a", torch.randn(8)), ("b", torch.randn(8))):
        (root / name).mkdir(parents=True)
        save_file({"shared": shared, "own": own}, str(root / name / "pruned.safetensors"))
        (root / name / "config.json").write_text(name)
    whole_b = load_file(str(root / "b" / "pruned.safetensors"))
    assert parts.dedupe(root / "a", root / "b") == shared.numel() * 4
    assert set(load_file(str(root / "b" / "pruned.safetensors"))) == {"own"}
    pieces = parts.split(root, ["a", "b"], first_bytes=6000)
    (stash / "parts").mkdir(parents=True)
    n = len(pieces)
    assert n > 1 and all(p.stat().st_size <= 6000 for p in pieces)
    for piece in pieces[:-1]:
        (stash / "parts" / piece.name).write_bytes(piece.read_bytes())
    assert parts.join(stash) == [f"part {n} of {n}"]  # said plainly, nothing unpacked
    assert not (stash / "a").exists()
    (stash / "parts" / pieces[-1].name).write_bytes(pieces[-1].read_bytes())
    assert parts.join(stash) == []
    back = load_file(str(stash / "b" / "pruned.safetensors"))
    assert set(back) == set(whole_b) and all(torch.equal(back[k], whole_b[k]) for k in back)
    assert (stash / "a" / "config.json").read_text() == "a"
