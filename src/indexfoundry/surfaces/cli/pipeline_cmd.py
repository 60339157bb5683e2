"""``indexfoundry pipeline run``."""

from __future__ import annotations

from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.models.manifests import PipelineRunOutput
from indexfoundry.surfaces.cli.options import Force, Json, RunsDir
from indexfoundry.surfaces.cli.output import RichProgress, print_json

app = typer.Typer(help="Run the whole pipeline.", no_args_is_help=True)


def render_run(output: PipelineRunOutput) -> None:
    """Short human summary; the last line names the run id."""
    for name, phase in output.phases.items():
        extra = f"  reused {phase.reused}, new {phase.new}" if (phase.reused or phase.new) else ""
        errors = f"  {len(phase.errors)} error(s)" if phase.errors else ""
        typer.echo(f"  {name:<10} {phase.status:<10} {phase.duration_ms / 1000:7.2f}s{extra}{errors}")
    s = output.summary
    typer.echo(
        f"{output.status}: {s.sources_fetched} sources, {s.chunks_indexed} chunks indexed, "
        f"{s.errors} errors, {s.duration_ms / 1000:.2f}s"
    )
    if s.errors:
        typer.echo(f"errors are listed in {Path(output.manifest_path).parent / 'logs' / 'errors.ndjson'}")
    typer.echo(f"run {output.run_id}")


@app.command("run")
def run(
    config: Path = typer.Argument(..., help="Pipeline config file (YAML or JSON).", show_default=False),
    runs_dir: Path | None = RunsDir,
    run_id: str | None = typer.Option(None, "--run-id", help="Rerun this run in place, skipping what did not change."),
    base: str | None = typer.Option(
        None,
        "--base",
        help="Incremental run: a new run reusing everything unchanged from this run id ('latest': the newest "
        "completed run).",
    ),
    force: bool = Force,
    json_out: bool = Json,
) -> None:
    """Run connect → extract → normalize → index → serve for CONFIG.

    With --base, only what changed since that run is extracted and embedded again; the new
    run's artifacts are the same as a run from scratch.

    Exit code 0 when the run completed, 1 when it failed or ended partial (some documents failed).
    """
    output = api.pipeline_run(
        config,
        runs_dir=runs_dir,
        run_id=run_id,
        force=force,
        progress=RichProgress(enabled=None if not json_out else False),
        base=base,
    )
    if json_out:
        print_json(output)
    else:
        render_run(output)
    if output.status != "completed":
        raise typer.Exit(1)
