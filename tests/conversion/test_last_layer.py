"""conversion/last_layer.py: the [CLS]-only last layer computes what transformers' BertLayer
computes at [CLS], forward and backward, and the cached layer inputs are the encoder's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from conversion import attestation, last_layer
from docq.text.windowing import Window


def bert(seed: int = 0, attn: str = "eager") -> BertForSequenceClassification:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=60, hidden_size=48, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=96, num_labels=3,
    )  # fmt: skip
    model = BertForSequenceClassification(config).eval()
    model.set_attn_implementation(attn)
    with torch.no_grad():  # a trained layer's biases are not zero, as a fresh one's are
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.5)
    return model


def padded_batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    hidden = torch.randn(4, 11, 48, dtype=torch.float64)
    mask = torch.ones(4, 11, dtype=torch.bool)
    mask[1, 7:] = False
    mask[2, 2:] = False
    mask[3, 10:] = False
    hidden[~mask] = 5.0  # what padding holds must not matter
    return hidden, mask


def full_layer_cls(model: BertForSequenceClassification, hidden: torch.Tensor,
                   mask: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """transformers' own BertLayer over every position, with the model's 4-d additive mask."""
    additive = (~mask[:, None, None, :]).to(hidden.dtype) * torch.finfo(hidden.dtype).min
    out = last_layer.last_layer(model)(hidden, attention_mask=additive)
    return (out[0] if isinstance(out, tuple) else out)[:, 0]


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_the_cls_only_layer_is_the_full_layer_at_cls(attn: str) -> None:
    model = bert(attn=attn).double()
    hidden, mask = padded_batch()
    with torch.no_grad():
        want = full_layer_cls(model, hidden, mask)
        got = last_layer.cls_forward(last_layer.last_layer(model), hidden, mask)
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)
    # Not equal to a position that is not [CLS], nor to the layer blind to the mask.
    assert not torch.allclose(got, full_layer_cls(model, hidden, torch.ones_like(mask)))


def test_the_cls_only_layer_has_the_full_layers_gradients() -> None:
    """Training it is training the real layer: every parameter's gradient is the same."""
    model = bert().double()
    hidden, mask = padded_batch()
    layer = last_layer.last_layer(model)
    grads = []
    for forward in (full_layer_cls, None):
        layer.zero_grad()
        out = (forward(model, hidden, mask) if forward else
               last_layer.cls_forward(layer, hidden, mask))  # fmt: skip
        (out * torch.linspace(-1, 1, out.shape[1], dtype=out.dtype)).sum().backward()
        grads.append({n: p.grad.clone() for n, p in layer.named_parameters()})  # type: ignore[union-attr]
    for name, want in grads[0].items():
        torch.testing.assert_close(grads[1][name], want, atol=1e-9, rtol=1e-7, msg=name)


def test_layer_inputs_are_the_encoders_hidden_states_before_its_last_layer() -> None:
    model = bert()
    rng = np.random.default_rng(3)
    windows = [Window(0, np.asarray([2, *rng.integers(5, 60, n), 3])) for n in (3, 9, 1)]
    inputs = last_layer.layer_inputs(model, windows, batch_size=2)
    assert len(model.bert.encoder.layer) == 3  # put back
    for window, got in zip(windows, inputs, strict=True):
        with torch.no_grad():
            out = model.bert(input_ids=torch.from_numpy(window.ids)[None],
                             output_hidden_states=True)  # fmt: skip
        assert got.dtype == torch.float16 and got.shape == (window.length, 48)
        torch.testing.assert_close(got.float(), out.hidden_states[-2][0], atol=2e-3, rtol=1e-3)
        # and the model's logits are the head on the cached inputs' [CLS]-only last layer
        torch.testing.assert_close(last_layer.logits(model, [out.hidden_states[-2][0]]),
                                   model(input_ids=torch.from_numpy(window.ids)[None]).logits,
                                   atol=1e-5, rtol=1e-5)  # fmt: skip


def test_training_moves_the_last_layer_and_the_head_only(tmp_path: Path) -> None:
    model = bert()
    torch.manual_seed(4)
    inputs = [torch.randn(n, 48).half() for n in (5, 8, 3, 12, 7, 6)]
    labels = np.asarray([0, 1, 2, 0, 1, 2])
    before = {n: p.clone() for n, p in model.named_parameters()}
    losses = last_layer.train(model, inputs, labels, epochs=30, batch_size=4, layer_lr=1e-3)
    assert losses[-1] < losses[0]
    trained = {*attestation.HEAD_PARAMETERS, *attestation.layer_parameters(model)}
    for name, p in model.named_parameters():
        moved = not torch.equal(p, before[name])
        assert moved == (name in trained), name  # key.bias: by weight decay alone
