"""Any Hugging Face sequence classifier converts (issue 40, item 1): BERT, RoBERTa and XLM-R
checkpoints with their own tokenizers, made here offline (the `tokenizers` library trains a
WordPiece, a byte-level BPE and a Unigram model on a few sentences; transformers wraps and
saves each as `save_pretrained` does), convert with the onnx-cpu runtime behind the parity
gate, and the workers' own tokenizing and windowing give transformers' windows and logits.
A checkpoint docq cannot serve is refused with one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers as tf
from typer.testing import CliRunner

from client.cli import app
from conversion import export
from docq.text.packing import pad
from docq.text.tokenizing import load_tokenizer, window_spec
from docq.text.tokens import tokenizer_files, windows_of
from tests.support.checkpoints import FAMILIES, config_of, make_checkpoint

pytestmark = pytest.mark.build  # every test here converts a model (tests/tiers.py)


def _convert(checkpoint: Path, repo: Path, work: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app,
        [
            "convert",
            str(checkpoint),
            "--name",
            "any",
            "--repository",
            str(repo),
            "--workdir",
            str(work),
            "--max-seq-len",
            "16",  # several windows per document: the windowing is what is checked
            "--stride",
            "4",
            *extra,
        ],
    )
    return result.exit_code, result.output


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_checkpoint_converts_with_its_own_tokenizer_and_serves_transformers_windows(
    family: str, tmp_path: Path
) -> None:
    checkpoint = make_checkpoint(tmp_path / "checkpoint", family)
    docs = FAMILIES[family][1]
    documents = tmp_path / "docs.ndjson"
    documents.write_text(
        "".join(
            json.dumps({"id": str(i), "text": text, "label": label}, ensure_ascii=False) + "\n"
            for i, (text, label) in enumerate(docs)
        ),
        encoding="utf-8",
    )
    repo = tmp_path / "repo"
    code, output = _convert(
        checkpoint, repo, tmp_path / "work", "--documents", str(documents), "--publish"
    )
    assert code == 0, output
    assert "PASS" in output and "published" in output
    report = json.loads((tmp_path / "work" / "any" / "parity.json").read_text())
    assert report["passed"] and report["documents"] == len(docs)
    assert report["windows"] > len(docs)  # documents were cut into several windows

    # The tokenizer travels as save_pretrained wrote it, byte for byte.
    model_dir = repo / "any"
    saved = tokenizer_files(checkpoint)
    assert "tokenizer.json" in saved
    assert sorted(p.name for p in (model_dir / "tokenizer").iterdir()) == list(saved)
    for name in saved:
        assert (model_dir / "tokenizer" / name).read_bytes() == (checkpoint / name).read_bytes()

    # The workers' tokenizing and windowing (from the published folder) cut the windows
    # transformers cuts itself: same special tokens, same overlap, same pad id.
    tok = load_tokenizer(model_dir / "tokenizer")
    reference = tf.AutoTokenizer.from_pretrained(str(checkpoint))
    texts = [text for text, _ in docs]
    ours = windows_of(tok, texts, window_spec(tok, 16, 4))
    for text, windows in zip(texts, ours, strict=True):
        theirs = reference(
            text, max_length=16, stride=4, truncation=True, return_overflowing_tokens=True
        )["input_ids"]
        assert [w.ids.tolist() for w in windows] == theirs
    flat = [w for ws in ours for w in ws]
    ids, mask = pad(flat, tok.pad_token_id)
    assert tok.pad_token_id == reference.pad_token_id == (0 if family == "Bert" else 1)

    # Served logits (the published ONNX graph, as onnx-cpu runs it) = transformers in-process.
    model = tf.AutoModelForSequenceClassification.from_pretrained(str(checkpoint)).eval()
    batch = reference.pad(
        {"input_ids": [w.ids.tolist() for w in flat]}, padding=True, return_tensors="pt"
    )
    with torch.inference_mode():
        expected = model(**batch).logits.numpy()
    served = export.run(export.session(model_dir / "1" / "model.onnx"), (ids, mask))
    assert np.abs(served - expected).max() < 1e-4
    assert (served.argmax(1) == expected.argmax(1)).all()


def test_the_export_traces_with_the_tokenizers_ids_and_pad(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "checkpoint", "Roberta")
    model = tf.AutoModelForSequenceClassification.from_pretrained(str(checkpoint))
    tok = load_tokenizer(checkpoint)
    ids, mask = export.trace_inputs(model, tok)
    assert ids[0].tolist() == tok(export.TRACE_TEXTS[0])["input_ids"]
    assert ids[0, 0] == tok.cls_token_id == 0 and tok.sep_token_id == 2
    assert ids[1][mask[1] == 0].tolist() and set(ids[1][mask[1] == 0].tolist()) == {1}
    assert int(ids.max()) < model.config.vocab_size


def _refused(checkpoint: Path, tmp_path: Path) -> str:
    code, output = _convert(checkpoint, tmp_path / "repo", tmp_path / "work")
    assert code == 2, output
    assert "Traceback" not in output and "Error" not in output, output
    lines = [line for line in output.splitlines() if line.startswith("docq")]
    assert len(lines) == 1 and lines[0].startswith("docq convert: refused: "), output
    assert not (tmp_path / "work" / "any").exists() and not (tmp_path / "repo").exists()
    return lines[0]


def test_a_checkpoint_without_a_tokenizer_is_refused_in_one_line(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "checkpoint", "Roberta")
    for name in tokenizer_files(checkpoint):
        (checkpoint / name).unlink()
    assert "has no tokenizer" in _refused(checkpoint, tmp_path)


def test_a_model_that_is_not_a_sequence_classifier_is_refused(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "checkpoint", "Bert")
    tf.BertModel(config_of("Bert", 100)).save_pretrained(checkpoint)  # the encoder only
    assert "is not a sequence classifier" in _refused(checkpoint, tmp_path)


def test_a_checkpoint_without_a_label_map_is_refused(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "checkpoint", "XLMRoberta")
    config = json.loads((checkpoint / "config.json").read_text())
    del config["id2label"], config["label2id"]
    (checkpoint / "config.json").write_text(json.dumps(config))
    assert "has no label map" in _refused(checkpoint, tmp_path)


def test_a_tokenizer_larger_than_the_models_vocabulary_is_refused(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "checkpoint", "Roberta")
    config = json.loads((checkpoint / "config.json").read_text())
    config["vocab_size"] = 100
    (checkpoint / "config.json").write_text(json.dumps(config))
    tf.AutoModelForSequenceClassification.from_config(
        tf.AutoConfig.from_pretrained(str(checkpoint))
    ).save_pretrained(checkpoint)
    assert "do not belong together" in _refused(checkpoint, tmp_path)
