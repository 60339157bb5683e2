"""``indexfoundry run status|list``."""

from __future__ import annotations

from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.surfaces.cli.options import Json, RunsDir
from indexfoundry.surfaces.cli.output import print_json

app = typer.Typer(help="Inspect runs.", no_args_is_help=True)


@app.command("status")
def status(
    run_id: str = typer.Argument(..., help="Run id ('latest' for the newest completed run).", show_default=False),
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Phases, counts, timings and errors of a run."""
    out = api.status(run_id, runs_dir=runs_dir)
    if json_out:
        print_json(out)
        return
    typer.echo(f"run {out.run_id}  {out.status}  created {out.created_at}")
    if out.died_in_phase:
        typer.echo(f"  the process running this run died during '{out.died_in_phase}'; rerun it to resume")
    for name, phase in out.phases.items():
        duration = f"{phase.duration_ms / 1000:.2f}s" if phase.duration_ms is not None else "-"
        typer.echo(f"  {name:<10} {phase.status:<10} {duration:>8}  outputs {phase.outputs}  errors {phase.errors}")
    for error in out.errors[:20]:
        typer.echo(f"  ! {error.code} {error.uri or ''}: {error.message}")
    if len(out.errors) > 20:
        typer.echo(f"  … {len(out.errors) - 20} more in logs/errors.ndjson")


@app.command("list")
def list_(
    runs_dir: Path | None = RunsDir,
    status: str = typer.Option("all", "--status", help="all | completed | running | failed | partial"),
    limit: int = typer.Option(20, "--limit", min=1, max=100, help="Most runs shown."),
    before: str | None = typer.Option(None, "--before", help="Only runs created before this ISO time."),
    after: str | None = typer.Option(None, "--after", help="Only runs created after this ISO time."),
    json_out: bool = Json,
) -> None:
    """Runs, newest first."""
    if status not in ("all", "completed", "running", "failed", "partial"):
        from indexfoundry.errors import ConfigInvalid

        raise ConfigInvalid(f"unknown status '{status}'", suggestion="all, completed, running, failed or partial")
    items = api.runs(runs_dir=runs_dir, status_filter=status, limit=limit, before=before, after=after)  # type: ignore[arg-type]
    if json_out:
        print_json({"runs": [i.model_dump(mode="json", exclude_none=True) for i in items]})
        return
    if not items:
        typer.echo("no runs")
    for item in items:
        typer.echo(f"{item.run_id}  {item.status:<9} {item.created_at}  chunks {item.chunks}  errors {item.errors}")
