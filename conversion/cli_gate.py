"""What `docq convert` and `docq validate` share: the labelled documents the gate reads, its
options, a checkpoint's refusal as one line, and the parity run and its printed verdict."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from conversion.parity import ParityReport, Thresholds, Windowing
    from corpus.doc_type import LabelledDocument

Corpus = Annotated[
    str | None,
    typer.Option(help="Synthetic labelled documents of a demo model: doc-type or doc-lang."),
]
Documents = Annotated[
    Path | None,
    typer.Option(help='Labelled documents: NDJSON, one {"id", "text", "label"} per line.'),
]
N = Annotated[int, typer.Option("--n", help="How many synthetic documents.")]
Seed = Annotated[int, typer.Option(help="Synthetic corpus seed (not a training seed).")]
MaxAccDiff = Annotated[
    float, typer.Option(help="Largest accepted accuracy difference, percentage points.")
]
MinAgreement = Annotated[float, typer.Option(help="Smallest accepted label agreement (0-1).")]


def labelled_documents(
    corpus: str | None, documents: Path | None, n: int, seed: int
) -> tuple[list[LabelledDocument], str]:
    from conversion import parity

    if documents is not None:
        return parity.read_documents(documents), str(documents)
    if corpus is None:
        raise typer.BadParameter("give --documents FILE or --corpus doc-type|doc-lang")
    return parity.synthetic(corpus, n, seed), f"synthetic {corpus} corpus, seed {seed}"


@contextmanager
def refusals(command: str) -> Iterator[None]:
    """A checkpoint docq cannot convert: one line on stderr and exit 2, no traceback."""
    from conversion.checkpoint import CheckpointRefused

    try:
        yield
    except CheckpointRefused as exc:
        typer.echo(f"docq {command}: refused: {exc}", err=True)
        raise typer.Exit(2) from None


def echo_report(report: ParityReport, paths: tuple[Path, Path] | None) -> None:
    verdict = "PASS" if report.passed else "FAIL"
    typer.echo(
        f"{verdict} {report.candidate}: agreement {report.agreement:.4%}, accuracy "
        f"{report.reference_accuracy:.4%} -> {report.candidate_accuracy:.4%} "
        f"({report.accuracy_diff_pt:+.3f} pt), max |logit diff| "
        f"{report.max_abs_logit_diff:.2e}, mean {report.mean_abs_logit_diff:.2e} "
        f"on {report.documents} documents ({report.windows} windows)"
    )
    for failure in report.failures:
        typer.echo(f"  - {failure}")
    if paths:
        typer.echo(f"  report: {paths[0]} and {paths[1]}")


def run_parity(
    checkpoint: Path,
    candidates: list[str],
    reference: str,
    docs: list[LabelledDocument],
    source: str,
    windowing: Windowing,
    thresholds: Thresholds,
    threads: int,
) -> list[ParityReport]:
    """One report per candidate; the reference's logits are computed once for all."""
    import torch

    from conversion import parity
    from conversion.checkpoint import load_checkpoint
    from docq.text.tokenizing import load_tokenizer

    torch.set_num_threads(threads)
    model, labels = load_checkpoint(checkpoint)
    tokenizer = load_tokenizer(checkpoint)
    ref_runner = parity.candidate(reference, model, threads)
    cached = parity.cached(ref_runner)
    reports = []
    for spec in candidates:
        reports.append(
            parity.compare(
                cached,
                parity.candidate(spec, model, threads),
                docs,
                labels,
                tokenizer,
                names=(f"{reference} ({checkpoint.name})", spec),
                windowing=windowing,
                thresholds=thresholds,
                source=source,
            )
        )
    return reports
