"""The parity gate's verdict and report: the thresholds a candidate must meet, how its
documents were windowed, and the report `docq validate` prints and writes (JSON and
markdown). What is measured, and how, is conversion/parity.py's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from docq.text.aggregation import Aggregation


@dataclass(frozen=True)
class Thresholds:
    """When a candidate is good enough to publish."""

    max_accuracy_diff_pt: float = 0.05  # |candidate - reference accuracy|, percentage points
    min_agreement: float = 0.995  # share of documents where both give the same label


@dataclass(frozen=True)
class Windowing:
    """How documents become model inputs: the served model's parameters."""

    max_seq_len: int = 512
    stride: int = 64
    aggregation: str = Aggregation.MEAN.value
    batch_size: int = 8  # windows per model call; padding follows the packer's sort


@dataclass
class ParityReport:
    """Everything `docq validate` measured, as written to JSON and markdown."""

    reference: str
    candidate: str
    documents: int
    windows: int
    labels: list[str]
    agreement: float
    reference_accuracy: float
    candidate_accuracy: float
    accuracy_diff_pt: float  # candidate minus reference, in percentage points
    max_abs_logit_diff: float  # over every logit of every window
    mean_abs_logit_diff: float
    max_abs_score_diff: float  # over every document's aggregated probabilities
    thresholds: Thresholds
    passed: bool
    failures: list[str]
    windowing: Windowing
    source: str  # where the documents came from
    seconds: dict[str, float]
    environment: dict[str, str]
    disagreements: list[dict[str, str]] = field(default_factory=list)  # the first few

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False) + "\n"

    def to_markdown(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        t = self.thresholds
        rows = [
            ("documents (windows)", f"{self.documents:,} ({self.windows:,})"),
            ("label agreement", f"{self.agreement:.4%} (needs >= {t.min_agreement:.1%})"),
            ("reference accuracy", f"{self.reference_accuracy:.4%}"),
            ("candidate accuracy", f"{self.candidate_accuracy:.4%}"),
            (
                "accuracy difference",
                f"{self.accuracy_diff_pt:+.3f} pt (needs within +-{t.max_accuracy_diff_pt} pt)",
            ),
            ("max abs logit diff", f"{self.max_abs_logit_diff:.3e}"),
            ("mean abs logit diff", f"{self.mean_abs_logit_diff:.3e}"),
            ("max abs score diff", f"{self.max_abs_score_diff:.3e}"),
            (
                "windowing",
                f"{self.windowing.max_seq_len} tokens, stride {self.windowing.stride}, "
                f"{self.windowing.aggregation}",
            ),
            ("documents from", self.source),
            (
                "time",
                ", ".join(f"{k} {v:.1f} s" for k, v in self.seconds.items())
                + " (a reference shared by several candidates runs once)",
            ),
            ("environment", ", ".join(f"{k} {v}" for k, v in self.environment.items())),
        ]
        lines = [
            f"#### {verdict}: `{self.candidate}` vs `{self.reference}`",
            "",
            "| | |",
            "| --- | --- |",
            *(f"| {k} | {v} |" for k, v in rows),
        ]
        if self.failures:
            lines += ["", *(f"- {f}" for f in self.failures)]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ParityReport:
        data = json.loads(text)
        data["thresholds"] = Thresholds(**data["thresholds"])
        data["windowing"] = Windowing(**data["windowing"])
        return cls(**data)

    def write(self, prefix: Path) -> tuple[Path, Path]:
        """Write `<prefix>.json` and `<prefix>.md`; return both paths."""
        prefix.parent.mkdir(parents=True, exist_ok=True)
        json_path, md_path = prefix.with_suffix(".json"), prefix.with_suffix(".md")
        json_path.write_text(self.to_json(), encoding="utf-8")
        md_path.write_text(self.to_markdown(), encoding="utf-8")
        return json_path, md_path


def verdict(
    agreement: float, accuracy_diff_pt: float, thresholds: Thresholds
) -> tuple[bool, list[str]]:
    """Whether the numbers pass, and why not. NaN never passes."""
    failures = []
    if not agreement >= thresholds.min_agreement:
        failures.append(f"label agreement {agreement:.4%} is below {thresholds.min_agreement:.2%}")
    if not abs(accuracy_diff_pt) <= thresholds.max_accuracy_diff_pt + 1e-9:
        failures.append(
            f"accuracy differs by {accuracy_diff_pt:+.3f} pt, more than "
            f"+-{thresholds.max_accuracy_diff_pt} pt"
        )
    return not failures, failures
