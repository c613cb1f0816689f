"""conversion/demo_cache.py: a training run reads back the frozen layers' outputs a run on
the same encoder and windows kept, and never those of other windows or another encoder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from conversion import demo_cache, last_layer
from docq.text.windowing import Window


def windows(*ids: Sequence[int]) -> list[Window]:
    return [Window(doc=i, ids=np.asarray(x, dtype=np.int64)) for i, x in enumerate(ids)]


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[list[Window]]:
    """Stands in for the encoder: each window's 'layer input' is its ids, one row a token;
    records every batch of windows it was asked to encode."""
    calls: list[list[Window]] = []

    def fake(model: object, ws: Sequence[Window]) -> list[torch.Tensor]:
        calls.append(list(ws))
        return [torch.tensor(w.ids, dtype=torch.float16)[:, None].repeat(1, 4) for w in ws]

    monkeypatch.setattr(last_layer, "layer_inputs", fake)
    return calls


@pytest.fixture
def encoder(tmp_path: Path) -> Path:
    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights one")
    return folder


def test_a_second_run_on_the_same_windows_reads_what_the_first_kept(
    encoded: list[list[Window]], encoder: Path, tmp_path: Path
) -> None:
    ws = windows([101, 7, 8, 102], [101, 9, 102])
    first, cached = demo_cache.layer_inputs(None, ws, encoder, tmp_path / "cache")  # type: ignore[arg-type]
    assert not cached and len(encoded) == 1
    again, cached = demo_cache.layer_inputs(None, ws, encoder, tmp_path / "cache")  # type: ignore[arg-type]
    assert cached and len(encoded) == 1  # not encoded again
    assert all(
        torch.equal(a, b) and a.dtype == torch.float16 for a, b in zip(first, again, strict=True)
    )
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".pt"]  # no partial file left


def test_other_windows_or_another_encoder_are_encoded_anew(
    encoded: list[list[Window]], encoder: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    demo_cache.layer_inputs(None, windows([101, 7, 8, 102]), encoder, cache)  # type: ignore[arg-type]
    # Same number of windows and tokens, one id changed.
    _, cached = demo_cache.layer_inputs(None, windows([101, 7, 9, 102]), encoder, cache)  # type: ignore[arg-type]
    assert not cached
    # The same ids cut into other windows.
    _, cached = demo_cache.layer_inputs(None, windows([101, 7], [8, 102]), encoder, cache)  # type: ignore[arg-type]
    assert not cached
    (encoder / "model.safetensors").write_bytes(b"weights two")
    _, cached = demo_cache.layer_inputs(None, windows([101, 7, 8, 102]), encoder, cache)  # type: ignore[arg-type]
    assert not cached
    assert len(encoded) == 4


def test_no_cache_encodes_every_time_and_writes_nothing(
    encoded: list[list[Window]], encoder: Path, tmp_path: Path
) -> None:
    ws = windows([101, 7, 102])
    for _ in range(2):
        _, cached = demo_cache.layer_inputs(None, ws, encoder, None)  # type: ignore[arg-type]
        assert not cached
    assert len(encoded) == 2
    assert list(tmp_path.iterdir()) == [encoder]
