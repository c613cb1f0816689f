"""The GPU benches' model: a random RoBERTa-large-shaped classifier, published for Triton as
`docq convert --runtime torch-gpu` lays it out, in variants of the converter's Target."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

MODEL = "roberta-large-doc"
LABELS = ("invoice", "receipt", "contract", "letter", "report", "other")
MAX_LEN, VOCAB = 512, 50265
# RoBERTa's special tokens, at its ids: <s> 0, <pad> 1, </s> 2, <unk> 3, <mask> 4.
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
# The byte-level BPE's training text: doc-type documents of a seed the benches never upload
# (2,000 of them, 6 MB, give all of RoBERTa-large's 50,265 tokens).
TOKENIZER_DOCS, TOKENIZER_SEED = 2000, 9001
PARAM = "param."  # a variant's `param.sdpa_backend=cudnn`: a config parameter, not a field
DEFAULT = "default"  # the variant that converts with the converter's defaults, no overrides


@dataclass
class Variant:
    """One served model: a name, the Target fields and the runtime parameters it overrides."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Variant:
        """NAME[:field=value,param.P=value,...], each field checked against Target's."""
        from conversion.convert import Target

        name, _, rest = text.partition(":")
        overrides: dict[str, Any] = {}
        for item in filter(None, rest.split(",")):
            key, _, value = item.partition("=")
            overrides[key] = int(value) if value.lstrip("-").isdigit() else value
        known = {f.name for f in fields(Target)}
        if unknown := {k for k in overrides if not k.startswith(PARAM)} - known:
            raise SystemExit(f"variant {name}: no Target field {sorted(unknown)}")
        variant = cls(name, overrides)
        if name == DEFAULT and variant.departures():
            raise SystemExit(f"variant {name!r} must keep the converter's defaults: {text}")
        return variant

    def departures(self) -> dict[str, Any]:
        """The overrides that depart from the converter's torch-gpu defaults
        (conversion/defaults.py), runtime parameters included."""
        from conversion.defaults import TORCH_GPU

        def default(key: str) -> str:  # a bool reads as a runtime parameter's `true`
            return str(getattr(TORCH_GPU, key.removeprefix(PARAM), None)).lower()

        return {k: v for k, v in self.overrides.items() if str(v).lower() != default(k)}

    @property
    def label(self) -> str:
        """The name the reports print: the name, and any default it overrides, so a figure
        measured off the defaults says so (`b8 [max_batch_size=8]`)."""
        departs = ",".join(f"{k}={v}" for k, v in self.departures().items())
        return f"{self.name} [{departs}]" if departs else self.name


def build_checkpoint(folder: Path, tiny: bool, device: str) -> dict[str, Any]:
    """A random RoBERTa classifier with 6 labels saved in `folder` (FP16 on a GPU, FP32 on a
    CPU): RoBERTa-large's shape, or 2 layers for a CPU rehearsal. Its vocabulary and special
    ids are RoBERTa's (VOCAB; <s> 0, <pad> 1, </s> 2), which build_tokenizer's keeps: real
    documents tokenize into its embeddings, and its <pad> is the padding index RoBERTa
    derives position ids from. Returns the model's shape."""
    import torch
    from transformers import AutoModelForSequenceClassification, RobertaConfig

    hidden, layers, heads = (64, 2, 2) if tiny else (1024, 24, 16)
    config = RobertaConfig(
        hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, max_position_embeddings=MAX_LEN + 2, type_vocab_size=1,
        num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)}, vocab_size=VOCAB,
        pad_token_id=1, bos_token_id=0, eos_token_id=2,
    )  # fmt: skip
    torch.manual_seed(0)
    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    with torch.device(device):  # random init on the GPU: seconds, not a minute
        model = AutoModelForSequenceClassification.from_config(config, dtype=dtype)
    model.eval().save_pretrained(folder, safe_serialization=True)
    return {"layers": layers, "hidden": hidden, "heads": heads, "vocab": config.vocab_size}


def publish_variant(
    repo: Path, checkpoint: Path, variant: Variant, on_gpu: bool, labels: Sequence[str] = LABELS
) -> Any:
    """`repo/<variant>/1/` as docq convert lays out a torch-gpu model (without its ONNX
    gate, which needs the full vocabulary): the checkpoint and the runtime, and beside them
    config.pbtxt, labels.txt naming `labels` (the checkpoint's, in order) and the
    checkpoint's tokenizer files, through the converter's own write_metadata; returns its
    ModelConfig."""
    from tritonclient.grpc import model_config_pb2 as mc

    from conversion import convert, package, pbtxt
    from serving import runtimes

    # The converter's defaults (conversion/defaults.py) unless the variant sets a Target
    # field, the batch size and the workers' budget included (`b8:max_batch_size=8`).
    fields_ = {"max_seq_len": MAX_LEN} | {
        k: v for k, v in variant.overrides.items() if not k.startswith(PARAM)
    }
    target = convert.Target(variant.name, "torch-gpu", **fields_)
    config = pbtxt.build(target.classifier_config(len(labels)))
    for key, value in variant.overrides.items():  # runtime parameters Target has no field for
        if key.startswith(PARAM):
            config.parameters[key.removeprefix(PARAM)].string_value = str(value)
    if not on_gpu:  # the CPU rehearsal: the same runtime file, an instance of kind CPU
        config.instance_group[0].kind = mc.ModelInstanceGroup.KIND_CPU
    model_dir = repo / variant.name
    version = model_dir / "1"
    version.mkdir(parents=True)
    for path in checkpoint.iterdir():  # hard links: one copy of the weights on disk
        os.link(path, version / path.name)
    runtimes.install("torch_gpu", version)
    package.write_metadata(model_dir, config, labels, checkpoint)
    return config


def build_tokenizer(folder: Path) -> Any:
    """A RoBERTa tokenizer made here (no hub): byte-level BPE of VOCAB tokens trained on
    doc-type text, framed `<s> ... </s>`, pad id 1, saved in `folder` as `save_pretrained`
    saves RoBERTa's (tokenizer.json + tokenizer_config.json); returned loaded from there, as
    docq's workers load it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import RobertaTokenizerFast

    from corpus.doc_type import generate
    from docq.text.tokenizing import load_tokenizer

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=list(SPECIALS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tok.train_from_iterator((d.text for d in generate(TOKENIZER_DOCS, TOKENIZER_SEED)), trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    RobertaTokenizerFast(tokenizer_object=tok, model_max_length=MAX_LEN).save_pretrained(folder)
    return load_tokenizer(folder)


def build_model(
    work: Path, tiny: bool, on_gpu: bool, overrides: dict[str, Any] | None = None
) -> tuple[Path, Path, dict[str, Any]]:
    """The pipeline bench's model: build_checkpoint's with a RoBERTa tokenizer
    (build_tokenizer), published by publish_variant (with `overrides`, a Variant's:
    `gelu=tanh`, `precision=fp8`) with the tokenizer beside it; (repository, checkpoint,
    facts)."""
    from google.protobuf import json_format

    checkpoint = work / "checkpoint"
    tok = build_tokenizer(checkpoint)  # where the old service and the converter find it
    shape = build_checkpoint(checkpoint, tiny, "cuda:0" if on_gpu else "cpu")
    repo = work / "repo"
    variant = Variant(MODEL, dict(overrides or {}))
    served = publish_variant(repo, checkpoint, variant, on_gpu)
    facts = {"name": MODEL, **shape, "labels": list(LABELS), "overrides": variant.overrides}
    facts["tokenizer"] = f"{type(tok).__name__} (byte-level BPE), pad id {tok.pad_token_id}"
    facts |= {"label": variant.label, "config": json_format.MessageToDict(served)}
    return repo, checkpoint, facts
