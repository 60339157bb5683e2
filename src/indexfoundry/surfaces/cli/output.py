"""Rendering helpers shared by the CLI commands: JSON for scripts, rich for people."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column

stderr = Console(stderr=True)

# A command this CLI names in a hint ("indexfoundry run status ID"), not "indexfoundry[ray]" or a tool name.
_COMMANDS = "pipeline|run|search|serve|mcp|config|connect|extract|normalize|index|export|eval"
_COMMAND = re.compile(rf"(?<![\w/.\[-])indexfoundry(?= (?:{_COMMANDS})\b)")


def program() -> str:
    """How to type this CLI so that it runs: ``indexfoundry`` when that is what the shell finds on
    PATH, else the path it was started by (``.venv/bin/indexfoundry`` after ``scripts/setup.sh``,
    the venv never activated)."""
    started = sys.argv[0] if sys.argv else ""
    if Path(started).name != "indexfoundry":
        return "indexfoundry"
    found = shutil.which("indexfoundry")
    if found is not None and Path(found).resolve() == Path(started).resolve():
        return "indexfoundry"
    return started if "/" in started else str(Path(started).resolve())


def as_invoked(text: str) -> str:
    """``text`` with every ``indexfoundry <command>`` it names written as :func:`program` says."""
    name = program()
    return text if name == "indexfoundry" else _COMMAND.sub(lambda _: name, text)


def render(output: BaseModel, json_out: bool, lines: list[str]) -> None:
    """A command's answer: the model as JSON with ``--json``, else its human lines."""
    if json_out:
        print_json(output)
        return
    for line in lines:
        typer.echo(line)


def print_json(value: Any) -> None:
    """Print a model or plain value as JSON on stdout."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    elif isinstance(value, list):
        value = [v.model_dump(mode="json", exclude_none=True) if isinstance(v, BaseModel) else v for v in value]
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


class _Task:
    def __init__(self, progress: Progress, task_id: Any) -> None:
        self.progress = progress
        self.task_id = task_id

    def advance(self, amount: int = 1) -> None:
        self.progress.advance(self.task_id, amount)


class _Null:
    def advance(self, amount: int = 1) -> None:
        return None


class RichProgress:
    """Progress bars on stderr, only when stderr is a terminal (never pollutes --json or logs)."""

    # Widths that fit an 80-column terminal whatever the label ("embed (local:all-MiniLM-L6-v2@…)"):
    # label 24 (cut with …), bar 24, "123456/123456" 13, "0:00:00" 7, and the separating spaces.
    LABEL_WIDTH = 24
    BAR_WIDTH = 24

    def __init__(self, enabled: bool | None = None, console: Console | None = None) -> None:
        self.console = console or stderr
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def progress(self) -> Progress:
        """The rich ``Progress`` with fixed column widths (a long label is cut, never the count)."""
        return Progress(
            TextColumn(
                "[bold]{task.description}",
                table_column=Column(width=self.LABEL_WIDTH, no_wrap=True, overflow="ellipsis"),
            ),
            BarColumn(bar_width=self.BAR_WIDTH),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            TimeElapsedColumn(table_column=Column(no_wrap=True)),
            console=self.console,
            transient=True,
        )

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Any]:
        if not self.enabled:
            yield _Null()
            return
        with self.progress() as progress:
            yield _Task(progress, progress.add_task(description, total=total))
