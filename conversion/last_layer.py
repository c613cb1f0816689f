"""Fine-tune a BERT classifier's last encoder layer with its head, the rest frozen, on 2 cores.

A frozen encoder's [CLS] state is a poor summary for the head to read: MiniLM was trained
for mean pooling, and a pooler + classifier on that state learns the training templates'
surface (issue 21's unseen-template misses). Training the last layer too lets the [CLS]
position learn what to attend to. Cheaply, because:

- the layers below stay frozen, so they run once: `layer_inputs` keeps each training
  window's input to the last layer (fp16, unpadded: about 0.75 KB a token);
- only the last layer's [CLS] output reaches the pooler, so `cls_forward` computes the
  query, attention output, feed-forward and LayerNorms for that one position. Its keys and
  values need every token, but linearly: q.(Wk x + bk) = (Wk^T q).x + q.bk and
  sum p (Wv x + bv) = Wv (sum p x) + bv sum p, so the layer's [CLS] output costs two
  [tokens x hidden] x [hidden x heads] products a window instead of the full layer's
  [tokens x hidden] x [hidden x hidden] ones - the same maths (tests/conversion/
  test_last_layer.py compares it with transformers' BertLayer), some 30x less work.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch
from transformers import BertForSequenceClassification
from transformers.models.bert.modeling_bert import BertLayer

from conversion.head import _pooler, fit
from docq.text.packing import pack
from docq.text.windowing import Window


def last_layer(model: BertForSequenceClassification) -> BertLayer:
    layer = model.bert.encoder.layer[-1]
    assert isinstance(layer, BertLayer)
    return layer


@torch.inference_mode()
def layer_inputs(
    model: BertForSequenceClassification, windows: Sequence[Window], batch_size: int = 16
) -> list[torch.Tensor]:
    """Each window's hidden states entering the last encoder layer: [length, hidden] fp16."""
    model.eval()
    layers = model.bert.encoder.layer
    out: list[torch.Tensor] = [torch.empty(0)] * len(windows)
    model.bert.encoder.layer = layers[:-1]  # the frozen layers only; put back below
    try:
        for batch in pack(windows, batch_size):
            hidden = model.bert(
                input_ids=torch.from_numpy(batch.input_ids),
                attention_mask=torch.from_numpy(batch.attention_mask),
            ).last_hidden_state
            for row, i in enumerate(batch.rows):
                out[i] = hidden[row, : windows[i].length].to(torch.float16).clone()
    finally:
        model.bert.encoder.layer = layers
    return out


def collate(inputs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows' layer inputs as one zero-padded FP32 batch and its boolean mask."""
    longest = max(x.shape[0] for x in inputs)
    hidden = torch.zeros(len(inputs), longest, inputs[0].shape[1])
    mask = torch.zeros(len(inputs), longest, dtype=torch.bool)
    for row, x in enumerate(inputs):
        hidden[row, : x.shape[0]] = x
        mask[row, : x.shape[0]] = True
    return hidden, mask


def cls_forward(layer: BertLayer, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """`layer`'s output at position 0 ([CLS]) for a padded batch [batch, length, hidden].

    `mask` is True at real tokens. Dropout acts where the full layer's does (attention
    probabilities, the two output projections) when `layer` is in training mode.
    """
    att = layer.attention.self
    heads, size = att.num_attention_heads, att.attention_head_size
    batch, width = hidden.shape[0], hidden.shape[2]
    first = hidden[:, 0]
    query = att.query(first).view(batch, heads, size) * att.scaling
    key_w = att.key.weight.view(heads, size, width)
    value_w = att.value.weight.view(heads, size, width)
    # Scores of [CLS] against every token without forming the keys: (Wk^T q) . x + q . bk.
    # (q . bk is the same for every token, so softmax drops it; kept for the same maths.)
    scores = torch.einsum("blw,bhw->bhl", hidden, torch.einsum("bhs,hsw->bhw", query, key_w))
    scores = scores + (query * att.key.bias.view(heads, size)).sum(-1, keepdim=True)
    scores = scores.masked_fill(~mask[:, None, :], torch.finfo(scores.dtype).min)
    probs = att.dropout(torch.softmax(scores, dim=-1))
    # The values' weighted sum without forming them: Wv (sum p x) + bv sum p (sum p is 1
    # but where dropout zeroed and rescaled some probabilities).
    mixed = torch.einsum("bhl,blw->bhw", probs, hidden)
    context = torch.einsum("bhw,hsw->bhs", mixed, value_w)
    context = context + att.value.bias.view(heads, size) * probs.sum(-1, keepdim=True)
    attended = layer.attention.output(context.reshape(batch, heads * size), first)
    out: torch.Tensor = layer.output(layer.intermediate(attended), attended)
    return out


def head_logits(model: BertForSequenceClassification, cls: torch.Tensor) -> torch.Tensor:
    """The pooler and classifier on last-layer [CLS] states (dropout as the model's mode)."""
    return model.classifier(model.dropout(torch.tanh(_pooler(model)(cls))))


def train(
    model: BertForSequenceClassification,
    inputs: Sequence[torch.Tensor],
    labels: npt.NDArray[np.int64],
    *,
    epochs: int = 300,
    lr: float = 2e-3,
    layer_lr: float = 2e-5,
    weight_decay: float = 1e-2,
    batch_size: int = 128,
    seed: int = 0,
) -> list[float]:
    """Fit the last encoder layer (at `layer_lr`), the pooler and the classifier (at `lr`)
    to the windows' cached layer inputs and labels; return the epoch losses.

    conversion.head.train's recipe (AdamW, cosine schedule, class-balanced loss) with the
    layer as a second parameter group.
    """
    layer = last_layer(model)

    def logits_of(batch: torch.Tensor) -> torch.Tensor:
        hidden, mask = collate([inputs[i] for i in batch.tolist()])
        return head_logits(model, cls_forward(layer, hidden, mask))

    return fit(
        model,
        [
            {"params": [*_pooler(model).parameters(), *model.classifier.parameters()], "lr": lr},
            {"params": list(layer.parameters()), "lr": layer_lr},
        ],
        logits_of,
        labels,
        epochs=epochs,
        weight_decay=weight_decay,
        batch_size=batch_size,
        seed=seed,
    )


@torch.inference_mode()
def logits(
    model: BertForSequenceClassification, inputs: Sequence[torch.Tensor], batch_size: int = 64
) -> torch.Tensor:
    """The model's logits (eval mode) of windows given by their cached layer inputs."""
    model.eval()
    order = sorted(range(len(inputs)), key=lambda i: inputs[i].shape[0])
    out = torch.empty(len(inputs), model.classifier.out_features)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        hidden, mask = collate([inputs[i] for i in rows])
        out[rows] = head_logits(model, cls_forward(last_layer(model), hidden, mask))
    return out


def round_to(
    model: BertForSequenceClassification, names: Sequence[str], dtype: torch.dtype
) -> None:
    """Round the named parameters to `dtype`'s values (kept FP32): what a head file stores
    in `dtype` is then exactly what the model exports and the gates measure."""
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in names:
            params[name].copy_(params[name].to(dtype).float())
