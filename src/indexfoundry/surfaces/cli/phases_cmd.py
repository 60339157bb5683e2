"""Per-phase commands: ``indexfoundry connect|extract|normalize|index|serve --run-id ID``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.surfaces.cli.options import Force, Json, RunsDir
from indexfoundry.surfaces.cli.output import RichProgress, print_json
from indexfoundry.surfaces.cli.pipeline_cmd import render_run

_HELP = {
    "connect": "Rerun the connect phase (fetch/copy sources into raw/).",
    "extract": "Rerun the extract phase (raw files → text).",
    "normalize": "Rerun the normalize phase (chunk, enrich, dedupe).",
    "index": "Rerun the index phase (embed and upsert).",
    "serve": "Rerun the serve phase (retrieval profile, OpenAPI spec).",
}


def _make(phase: str) -> Callable[..., None]:
    def command(
        run_id: str = typer.Option(..., "--run-id", help="Run to work on ('latest' for the newest)."),
        runs_dir: Path | None = RunsDir,
        force: bool = Force,
        json_out: bool = Json,
    ) -> None:
        output = api.run_phase(
            phase,
            run_id,
            runs_dir=runs_dir,
            force=force,
            progress=RichProgress(enabled=None if not json_out else False),
        )
        if json_out:
            print_json(output)
        else:
            render_run(output)
        if output.status == "failed":
            raise typer.Exit(1)

    command.__doc__ = _HELP[phase] + " Skips when its inputs did not change, unless --force."
    return command


def register(app: typer.Typer) -> None:
    for phase in ("connect", "extract", "normalize", "index", "serve"):
        app.command(phase, help=_HELP[phase])(_make(phase))
