"""Rendering helpers shared by the CLI commands: JSON for scripts, rich for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

stderr = Console(stderr=True)


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

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Any]:
        if not self.enabled:
            yield _Null()
            return
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stderr,
            transient=True,
        ) as progress:
            yield _Task(progress, progress.add_task(description, total=total))
