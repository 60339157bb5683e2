"""Per-phase command groups: ``indexfoundry <phase> --run-id ID [--force]`` reruns the phase;
subcommands (``indexfoundry connect url …``) run the design's single-purpose tools."""

from __future__ import annotations

from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.surfaces.cli.output import RichProgress, print_json
from indexfoundry.surfaces.cli.pipeline_cmd import render_run


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
        )
        if json_out:
            print_json(output)
        else:
            render_run(output)
        if output.status == "failed":
            raise typer.Exit(1)

    rerun.__doc__ = help_text + " Skipped when its inputs did not change, unless --force."
    return group
