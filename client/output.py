"""What `docq` shows: the progress bar of a wait, results as JSON lines, bad documents.

Output meant for scripts (job ids, JSON, JSON lines) goes to stdout; progress and messages
go to stderr (`console`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

console = Console(stderr=True)  # stdout is for what scripts read


def print_failed(failed: list[dict[str, Any]], what: str) -> None:
    """The bad documents of an upload, one line each: id, error_code, message."""
    if failed:
        console.print(f"{len(failed)} document(s) {what}:", highlight=False)
    for f in failed:
        console.print(
            f"  {f['id']}: {f['error_code']}: {f['message']}", highlight=False, markup=False
        )


class RateColumn(ProgressColumn):
    """Documents per second, as rich estimates it from recent updates."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f} doc/s", style="progress.data.speed")


def progress_bar() -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("documents"),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def write_results(results: Iterable[dict[str, Any]], output: Path | None) -> int:
    """Write results as JSON lines to `output` (stdout when None); return how many."""
    n = 0
    with output.open("w", encoding="utf-8") if output else nullcontext(sys.stdout) as out:
        stream: IO[str] = out
        for result in results:
            stream.write(json.dumps(result, ensure_ascii=False) + "\n")
            n += 1
    return n
