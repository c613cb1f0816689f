"""`docq validate`: candidates against the PyTorch FP32 reference, on labelled documents.

    docq validate build/doc-type/checkpoint \\
        --candidate onnx:model_repository/doc-type/1/model.onnx \\
        --corpus doc-type --n 2000 --out bench/parity/doc-type-onnx-fp32
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from conversion.cli_gate import (
    Corpus,
    Documents,
    MaxAccDiff,
    MinAgreement,
    N,
    Seed,
    echo_report,
    labelled_documents,
    refusals,
    run_parity,
)


def validate(
    checkpoint: Annotated[
        Path, typer.Argument(help="The reference: a Hugging Face checkpoint directory.")
    ],
    candidate: Annotated[
        list[str],
        typer.Option(
            help="What to check (repeatable): onnx:PATH, openvino:[fp32|bf16:]PATH, "
            "torch:fp16|bf16|fp32[:cuda], triton:HOST:PORT/MODEL or tensorrt:PATH."
        ),
    ],
    reference: Annotated[
        str, typer.Option(help="How the reference runs: torch:fp32 (CPU) or torch:fp32:cuda.")
    ] = "torch:fp32",
    corpus: Corpus = None,
    documents: Documents = None,
    n: N = 1000,
    seed: Seed = 4004,
    max_seq_len: Annotated[int, typer.Option(help="Window length, as served.")] = 512,
    stride: Annotated[int, typer.Option(help="Window overlap, as served.")] = 64,
    aggregation: Annotated[str, typer.Option(help="mean or weighted, as served.")] = "mean",
    batch_size: Annotated[int, typer.Option(help="Windows per model call.")] = 8,
    threads: Annotated[int, typer.Option(help="CPU threads of CPU runners.")] = 2,
    max_accuracy_diff_pt: MaxAccDiff = 0.05,
    min_agreement: MinAgreement = 0.995,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Report prefix: writes PREFIX.json and PREFIX.md (a suffix per "
            "candidate when several are given)."
        ),
    ] = None,
) -> None:
    """Check candidates against the PyTorch FP32 reference on labelled documents."""
    from conversion.parity import Thresholds, Windowing

    docs, source = labelled_documents(corpus, documents, n, seed)
    windowing = Windowing(max_seq_len, stride, aggregation, batch_size)
    thresholds = Thresholds(max_accuracy_diff_pt, min_agreement)
    with refusals("validate"):
        reports = run_parity(
            checkpoint, candidate, reference, docs, source, windowing, thresholds, threads
        )
    for i, report in enumerate(reports):
        paths = None
        if out is not None:
            prefix = out if len(reports) == 1 else out.with_name(f"{out.name}-{i + 1}")
            paths = report.write(prefix)
        echo_report(report, paths)
    if not all(r.passed for r in reports):
        raise typer.Exit(1)
