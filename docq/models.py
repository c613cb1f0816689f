"""What docq needs to know about a served model, read from Triton and its repository.

The windowing parameters and batch limits come from the model's `config.pbtxt` as Triton
serves it (so the packer, the Triton config and the TensorRT profile read the same
numbers); labels and tokenizer files come from the model's folder in the repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docq.errors import ModelError


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A classification model as the pipeline sees it."""

    name: str
    max_batch_size: int
    max_seq_len: int
    stride: int
    aggregation: str
    labels: tuple[str, ...]
    tokenizer_dir: Path
    runtime: str
    # Most tokens in one request: padded ones (rows x longest window), or real ones (the
    # sum of the windows' lengths) for a ragged model. Caps a batch of long windows below
    # max_batch_size x max_seq_len when memory or latency needs it.
    token_budget: int = 0  # 0: max_batch_size x max_seq_len
    # The inputs allow ragged batches (torch-gpu's flat engine): the model runs each
    # request's real tokens only, so padding costs it nothing and the budget counts real
    # tokens: short windows pack more rows per request.
    ragged: bool = False
    input_names: tuple[str, str] = ("input_ids", "attention_mask")
    output_name: str = "logits"

    @property
    def budget(self) -> int:
        """The token budget in force: the configured one, else max_batch_size x max_seq_len."""
        return self.token_budget or self.max_batch_size * self.max_seq_len

    @classmethod
    def from_triton_config(cls, config: dict[str, Any], repository: Path) -> ModelSpec:
        """Build from Triton's model config (gRPC `get_model_config(as_json=True)["config"]`)."""
        name = config["name"]
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        folder = repository / name
        # Ragged only if every input is: one padded input makes Triton batch equal shapes.
        inputs = config.get("input", [])
        ragged = bool(inputs) and all(i.get("allow_ragged_batch", False) for i in inputs)
        try:
            outputs = config["output"]
            label_file = outputs[0].get("label_filename") or "labels.txt"
            labels = tuple(
                line.strip()
                for line in (folder / label_file).read_text().splitlines()
                if line.strip()
            )
            spec = cls(
                name=name,
                max_batch_size=int(config.get("max_batch_size", 0)) or 1,
                max_seq_len=int(params.get("max_seq_len", "512")),
                stride=int(params.get("stride", "64")),
                aggregation=params.get("aggregation", "mean"),
                labels=labels,
                tokenizer_dir=folder / params.get("tokenizer", "tokenizer"),
                runtime=params.get("runtime", ""),
                token_budget=int(params.get("token_budget", "0")),
                ragged=ragged,
                output_name=outputs[0]["name"],
            )
        except (KeyError, ValueError, OSError) as exc:
            raise ModelError(f"model {name!r} is not a usable docq classifier: {exc}") from exc
        if not spec.labels:
            raise ModelError(f"model {name!r} has no labels")
        return spec
