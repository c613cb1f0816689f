"""classify() end to end on the CPU side, through a real Batcher whose requests go to a
recorder instead of Triton."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from docq.config import REPO_ROOT
from docq.errors import ModelError
from docq.models import ModelSpec
from docq.text.aggregation import Prediction
from docq.text.packing import Batch
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import split
from workers.batcher import Batcher
from workers.inference import Done
from workers.pipeline import classify, classify_documents

LABELS = ("a", "b", "c")
TOKENIZER = REPO_ROOT / "model_repository" / "doc-type" / "tokenizer"


def spec(**kw: int) -> ModelSpec:
    return ModelSpec(
        name="m",
        max_batch_size=kw.get("max_batch_size", 4),
        max_seq_len=32,
        stride=4,
        aggregation="mean",
        labels=LABELS,
        tokenizer_dir=TOKENIZER,
        runtime="test",
        token_budget=kw.get("token_budget", 0),
    )


def logits_of(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """A window's logits as a pure function of its tokens: label = first content id % 3."""
    out = np.zeros(len(LABELS), dtype=np.float32)
    out[int(ids[1]) % len(LABELS)] = 5.0
    return out


class Recorder:
    """Answers like a model would, from the padded rows it is sent, and keeps the requests."""

    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.priorities: set[int] = set()

    def send(self, spec: ModelSpec, batch: Batch, priority: int, done: Done) -> None:
        self.batches.append(batch)
        self.priorities.add(priority)
        done(np.stack([logits_of(row) for row in batch.input_ids]), None)


def batcher(rec: Recorder) -> Batcher:
    return Batcher(rec.send, max_wait_s=0.0)


TEXTS = [
    "Invoice number 17, total due 200 EUR.",
    " ".join(f"clause {i} of the agreement binds both parties" for i in range(40)),
    "receipt",
    " ".join(f"item {i} delivered in good order" for i in range(15)),
]


def test_predictions_follow_each_documents_own_windows() -> None:
    tok = load_tokenizer(TOKENIZER)
    wspec = window_spec(tok, 32, 4)
    rec = Recorder()
    preds = classify(TEXTS, spec(), tok, batcher(rec), priority=1)
    assert len(preds) == len(TEXTS)
    for text, pred in zip(TEXTS, preds, strict=True):
        windows = split(0, tokenize(tok, [text])[0], wspec)
        expected = np.mean([logits_of(w.ids) for w in windows], axis=0)
        assert pred.windows == len(windows)
        assert pred.label == LABELS[int(np.argmax(expected))]
        assert abs(sum(pred.scores.values()) - 1.0) < 1e-9
    assert rec.priorities == {1}
    assert sum(len(b.rows) for b in rec.batches) == sum(p.windows for p in preds)


def test_batches_respect_max_batch_size_and_token_budget() -> None:
    tok = load_tokenizer(TOKENIZER)
    rec = Recorder()
    classify(TEXTS, spec(max_batch_size=4, token_budget=64), tok, batcher(rec))
    batches = rec.batches
    assert all(len(b.rows) <= 4 for b in batches)
    assert all(b.computed_tokens <= 64 for b in batches)
    assert max(b.input_ids.shape[1] for b in batches) == 32


MARKER = "poison"


class Refuser(Recorder):
    """A model that refuses every request holding a window with the marker's first token
    (a permanent error, as Triton's INVALID_ARGUMENT becomes) and answers the others."""

    def __init__(self, marker_id: int) -> None:
        super().__init__()
        self.marker_id = marker_id

    def send(self, spec: ModelSpec, batch: Batch, priority: int, done: Done) -> None:
        if (batch.input_ids == self.marker_id).any():
            self.batches.append(batch)
            done(None, ModelError("model 'm' rejected the request: bad input"))
            return
        super().send(spec, batch, priority, done)


def test_a_window_the_model_refuses_fails_its_document_only() -> None:
    tok = load_tokenizer(TOKENIZER)
    marker_id = tok(MARKER, add_special_tokens=False)["input_ids"][0]
    texts = [*TEXTS[:2], f"{MARKER} in a short text", *TEXTS[2:]]
    rec = Refuser(marker_id)
    b = batcher(rec)
    expected = classify(TEXTS, spec(), tok, batcher(Recorder()))
    got: list[list[Prediction | str]] = []
    # Two shards at once, so that batches mix the windows of both.
    threads = [
        threading.Thread(target=lambda t=t: got.append(classify_documents(t, spec(), tok, b)))
        for t in (texts, TEXTS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first, second = sorted(got, key=len, reverse=True)
    assert first[2] == "model 'm' rejected the request: bad input"
    assert first[:2] + first[3:] == expected
    assert second == expected
    assert any(len(x.rows) > 1 for x in rec.batches if (x.input_ids == marker_id).any())
