"""conversion/attestation.py: a committed head goes into the model whole and only where its
record says it belongs; the demo builds take the record's gate only for the file it names."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertForSequenceClassification

from conversion import attestation, demo, demo_lang, last_layer
from conversion.evaluate import Accuracy
from corpus.doc_type import LABELS


def tiny_bert(seed: int) -> BertForSequenceClassification:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, num_labels=3,
    )  # fmt: skip
    return BertForSequenceClassification(config).eval()


def test_a_saved_head_loads_into_another_model_and_leaves_its_encoder(tmp_path: Path) -> None:
    trained, fresh = tiny_bert(1), tiny_bert(2)
    path = tmp_path / "head.safetensors"
    attestation.save_head(trained, path)
    encoder_before = {k: v.clone() for k, v in fresh.state_dict().items() if "encoder" in k}
    attestation.load_head(fresh, path)
    got, want = fresh.state_dict(), trained.state_dict()
    for name in attestation.HEAD_PARAMETERS:
        assert torch.equal(got[name], want[name]), name
    for name, before in encoder_before.items():
        assert torch.equal(got[name], before), name  # the encoder is not the head's to change


def test_a_file_that_is_not_this_models_head_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "head.safetensors"
    attestation.save_head(tiny_bert(1), path)
    wider = BertForSequenceClassification(
        BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    )
    with pytest.raises(ValueError, match="the model wants"):
        attestation.load_head(wider, path)


def layered(seed: int) -> tuple[BertForSequenceClassification, tuple[str, ...]]:
    """A tiny model whose head and last layer hold FP16 values, and their names."""
    model = tiny_bert(seed)
    names = (*attestation.HEAD_PARAMETERS, *attestation.layer_parameters(model))
    last_layer.round_to(model, names, torch.float16)
    return model, names


def test_a_head_with_the_last_layer_loads_whole_as_fp16_and_leaves_the_rest(
    tmp_path: Path,
) -> None:
    (trained, _), fresh = layered(1), tiny_bert(2)
    # Two layers each: the file carries the last (layer 1); layer 0 stays the receiver's.
    fresh.bert.encoder.layer.append(copy.deepcopy(fresh.bert.encoder.layer[0]))
    trained.bert.encoder.layer.insert(0, copy.deepcopy(fresh.bert.encoder.layer[0]))
    names = (*attestation.HEAD_PARAMETERS, *attestation.layer_parameters(trained))
    assert names[-1].startswith("bert.encoder.layer.1.")
    path = tmp_path / "head.safetensors"
    attestation.save_head(trained, path, names, torch.float16)
    assert {t.dtype for t in load_file(str(path)).values()} == {torch.float16}
    kept = {k: v.clone() for k, v in fresh.state_dict().items() if k not in names}
    attestation.load_head(fresh, path)
    got, want = fresh.state_dict(), trained.state_dict()
    for name in names:
        assert got[name].dtype == torch.float32 and torch.equal(got[name], want[name]), name
    for name, before in kept.items():
        assert torch.equal(got[name], before), name  # layer 0 and the embeddings: the wheel's


def test_a_head_is_stored_only_where_its_values_are_the_files(tmp_path: Path) -> None:
    model = tiny_bert(1)  # FP32 values FP16 cannot hold: the file would not be the model
    names = (*attestation.HEAD_PARAMETERS, *attestation.layer_parameters(model))
    with pytest.raises(ValueError, match="round them first"):
        attestation.save_head(model, tmp_path / "head.safetensors", names, torch.float16)


def test_a_head_with_part_of_a_layer_is_refused(tmp_path: Path) -> None:
    model, names = layered(1)
    path = tmp_path / "head.safetensors"
    attestation.save_head(model, path, names[:-1], torch.float16)  # one LayerNorm bias short
    with pytest.raises(ValueError, match="whole last encoder layer"):
        attestation.load_head(tiny_bert(2), path)


def committed_pair(tmp_path: Path, encoder: bytes = b"weights") -> tuple[Path, Path]:
    """A fake encoder folder and a heads folder whose record names that encoder."""
    source, heads = tmp_path / "encoder", tmp_path / "heads"
    source.mkdir()
    (source / "model.safetensors").write_bytes(encoder)
    attestation.save_head(tiny_bert(1), heads / "m.safetensors")
    record = {
        "encoder_sha256": attestation.encoder_sha256(source),
        "head_sha256": attestation.sha256(heads / "m.safetensors"),
    }
    attestation.write("m", record, heads)
    return source, heads


def test_the_record_is_used_only_with_its_encoder_and_its_head(tmp_path: Path) -> None:
    source, heads = committed_pair(tmp_path)
    assert attestation.committed("m", source, heads) is not None
    assert attestation.committed("other", source, heads) is None  # nothing committed

    (source / "model.safetensors").write_bytes(b"another wheel")
    assert attestation.committed("m", source, heads) is None  # trained on another encoder

    (source / "model.safetensors").write_bytes(b"weights")
    attestation.save_head(tiny_bert(3), heads / "m.safetensors")  # the head edited alone
    with pytest.raises(ValueError, match="not the head"):
        attestation.committed("m", source, heads)


def test_a_last_layer_weight_edited_without_its_record_is_refused(tmp_path: Path) -> None:
    source, heads = tmp_path / "encoder", tmp_path / "heads"
    source.mkdir()
    (source / "model.safetensors").write_bytes(b"weights")
    model, names = layered(1)
    attestation.commit("m", model, {"encoder_sha256": attestation.encoder_sha256(source)},
                       heads, names, torch.float16)  # fmt: skip
    assert attestation.committed("m", source, heads) is not None
    tensors = load_file(str(heads / "m.safetensors"))
    weight = "bert.encoder.layer.0.output.dense.weight"
    tensors[weight][0, 0] += 1
    save_file(tensors, str(heads / "m.safetensors"))
    with pytest.raises(ValueError, match="not the head"):
        attestation.committed("m", source, heads)


# --- the demo builds' three paths, on the real encoder and the committed heads ---------------


def copy_heads(tmp_path: Path, name: str, **changes: Any) -> Path:
    heads = tmp_path / "heads"
    heads.mkdir()
    (heads / f"{name}.safetensors").write_bytes(
        (attestation.HEADS / f"{name}.safetensors").read_bytes()
    )
    record = json.loads((attestation.HEADS / f"{name}.json").read_text(encoding="utf-8"))
    (heads / f"{name}.json").write_text(json.dumps({**record, **changes}), encoding="utf-8")
    return heads


@pytest.mark.build
def test_doc_type_takes_the_records_gate_for_the_file_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_gate(*_: object) -> None:
        raise AssertionError("the held-out gate ran for the attested file")

    monkeypatch.setattr(demo, "heldout_gate", no_gate)
    heads = copy_heads(tmp_path, demo.NAME)
    report = demo.build(tmp_path / "repo", tmp_path / "build", heads)
    assert report["published"] and report["head"] == "committed"
    assert str(report["gate"]).startswith("held-out gate of the record")
    served = tmp_path / "repo" / demo.NAME / "1" / "model.onnx"
    assert attestation.sha256(served) == report["onnx_sha256"]
    assert report["onnx_vs_torch_max_abs_logit_diff"] <= demo.MAX_LOGIT_DIFF  # type: ignore[operator]


@pytest.mark.build
def test_doc_type_gates_a_file_the_record_does_not_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other bytes (another exporter version, say) get the whole held-out gate here, and
    a failing gate publishes nothing, whatever the record says."""
    calls = []

    def failing_gate(*args: object) -> tuple[Accuracy, float, list[str]]:
        calls.append(args)
        truth = args[-1]  # the held-out documents' labels: a prediction for each, all wrong
        assert isinstance(truth, list)
        return Accuracy(n=2, accuracy=0.5, per_class={}, support={}), 0.0, ["?"] * len(truth)

    monkeypatch.setattr(demo, "heldout_gate", failing_gate)
    heads = copy_heads(tmp_path, demo.NAME, onnx_sha256="0" * 64)
    report = demo.build(tmp_path / "repo", tmp_path / "build", heads)
    assert len(calls) == 1
    assert not report["published"]
    assert report["gate"] == "held-out gate run here (the file differs from the record's)"
    assert not (tmp_path / "repo").exists()
    assert json.loads((heads / f"{demo.NAME}.json").read_text())["onnx_sha256"] == "0" * 64


@pytest.mark.build
def test_doc_lang_gates_a_file_the_record_does_not_name(tmp_path: Path) -> None:
    """doc-lang's held-out pass is short (ONNX Runtime, 256-token windows): it runs for real."""
    heads = copy_heads(tmp_path, demo_lang.NAME, onnx_sha256="0" * 64)
    report = demo_lang.build(tmp_path / "repo", tmp_path / "build", heads)
    committed = json.loads((attestation.HEADS / f"{demo_lang.NAME}.json").read_text())
    assert report["gate"] == "held-out gate run here (the file differs)"
    assert report["published"]
    assert report["heldout"] == committed["heldout"]  # measured here: the record's numbers
    assert report["onnx_sha256"] == committed["onnx_sha256"]


def test_labels_of_the_committed_heads_match_the_builds() -> None:
    for module, labels in ((demo, LABELS), (demo_lang, demo_lang.LANGUAGES)):
        record = json.loads((attestation.HEADS / f"{module.NAME}.json").read_text())
        assert list(record["heldout"]["per_class"]) == list(labels)


def test_a_differing_file_is_explained_by_the_exporters_that_changed() -> None:
    record = {"exporters": {**attestation.exporters(), "onnx": "0.1"}}
    message = attestation.differs("m", record)
    assert f"onnx 0.1 -> {attestation.exporters()['onnx']}" in message
    assert "torch" not in message  # only what changed is named
