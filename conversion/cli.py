"""`docq convert` and `docq validate`: a checkpoint to a served, parity-checked model.

The commands live here, beside the code they drive, and are registered on the `docq`
app by client/cli.py: conversion/cli_convert.py and conversion/cli_validate.py, each a
command, and conversion/cli_gate.py, what both share (the documents and the parity run).
Heavy imports (torch, transformers, onnx) happen inside the commands, so `docq submit` and
friends start fast and work without the build extras.

    docq convert build/doc-type/checkpoint --name doc-type --runtime onnx-cpu \\
        --corpus doc-type --n 1000 --publish
    docq validate build/doc-type/checkpoint \\
        --candidate onnx:model_repository/doc-type/1/model.onnx \\
        --corpus doc-type --n 2000 --out bench/parity/doc-type-onnx-fp32
"""

from __future__ import annotations

import typer

from conversion.cli_convert import convert
from conversion.cli_validate import validate

__all__ = ["app", "convert", "validate"]


def app() -> typer.Typer:
    """An app holding only these two commands (`python -m conversion.cli`, e.g. on a GPU host)."""
    standalone = typer.Typer(no_args_is_help=True)
    standalone.command()(convert)
    standalone.command()(validate)
    return standalone


if __name__ == "__main__":
    app()()
