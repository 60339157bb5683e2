"""Per-phase command groups: ``indexfoundry <phase> --run-id ID [--force]`` reruns the phase;
subcommands (``indexfoundry connect url …``) run the phase's single-purpose tools."""

from __future__ import annotations

from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.surfaces.cli.options import AllowShrink
from indexfoundry.surfaces.cli.output import RichProgress
from indexfoundry.surfaces.cli.pipeline_cmd import render_outcome


def phase_group(phase: str, help_text: str) -> typer.Typer:
    """A typer group whose bare invocation reruns ``phase`` of a run."""
    group = typer.Typer(help=help_text, invoke_without_command=True)

    @group.callback()
    def rerun(
        ctx: typer.Context,
        run_id: str | None = typer.Option(None, "--run-id", help="Run to work on ('latest' for the newest)."),
        runs_dir: Path | None = typer.Option(
            None, "--runs-dir", help="Runs folder (default: $INDEXFOUNDRY_RUNS_DIR or ./runs)."
        ),
        force: bool = typer.Option(False, "--force", help="Rerun even if its inputs did not change."),
        allow_shrink: bool = AllowShrink,
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    ) -> None:
        if ctx.invoked_subcommand is not None:
            return
        if run_id is None:
            typer.echo(ctx.get_help())
            raise typer.Exit(2)
        output = api.run_phase(
            phase,
            run_id,
            runs_dir=runs_dir,
            force=force,
            progress=RichProgress(enabled=None if not json_out else False),
            allow_shrink=allow_shrink,
        )
        render_outcome(output, runs_dir, json_out)

    rerun.__doc__ = (
        help_text + " Skipped when its inputs did not change, unless --force. Exit code 1 when the run is then"
        " failed or partial."
    )
    return group
