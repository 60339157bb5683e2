"""``indexfoundry pipeline run``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.cli.options import AllowShrink, Force, Json, RunsDir
from indexfoundry.surfaces.cli.output import RichProgress, as_invoked, print_json

if TYPE_CHECKING:
    from indexfoundry.models.manifests import ErrorRecord, PipelineRunOutput


class Executor(StrEnum):
    local = "local"
    ray = "ray"


app = typer.Typer(help="Run the whole pipeline.", no_args_is_help=True)

# Errors listed on the console after a run; the rest are counted and left to logs/errors.ndjson.
SHOWN_ERRORS = 5


def render_errors(errors: list[ErrorRecord], log_path: Path) -> None:
    """The first few errors with their code, source and what to do about each, then where the
    rest are (every run-level error, e.g. RUN_SHRANK or EMPTY_CONTENT, comes first)."""
    shown = sorted(errors, key=lambda error: error.uri is not None)[:SHOWN_ERRORS]
    for error in shown:
        where = f" {error.uri}" if error.uri else ""
        typer.echo(f"  {error.code}{where}: {error.message}", err=True)
        if error.suggestion:
            typer.echo(f"    → {as_invoked(error.suggestion)}", err=True)
    rest = len(errors) - SHOWN_ERRORS
    if rest > 0:
        typer.echo(f"  … and {rest} more in {log_path}", err=True)
    elif errors:
        typer.echo(f"  (all errors with details: {log_path})", err=True)


def next_steps(output: PipelineRunOutput) -> list[str]:
    """What to try after a run that can be searched."""
    if output.status == "failed":
        return [f"indexfoundry run status {output.run_id}"]
    return [
        'indexfoundry search "your question"',
        "indexfoundry serve start --run-id latest      # HTTP API and a search page",
        "indexfoundry mcp --run-id latest              # point an agent at it (stdio MCP)",
    ]


def render_run(output: PipelineRunOutput, errors: list[ErrorRecord] | None = None) -> None:
    """Short human summary, the first errors, what to try next; the last line names the run id."""
    for name, phase in output.phases.items():
        extra = f"  reused {phase.reused}, new {phase.new}" if (phase.reused or phase.new) else ""
        count = f"  {len(phase.errors)} error(s)" if phase.errors else ""
        typer.echo(f"  {name:<10} {phase.status:<10} {phase.duration_ms / 1000:7.2f}s{extra}{count}")
    s = output.summary
    typer.echo(
        f"{output.status}: {s.sources_fetched} sources, {s.chunks_indexed} chunks indexed, "
        f"{s.errors} errors, {s.duration_ms / 1000:.2f}s"
    )
    log_path = Path(output.manifest_path).parent / "logs" / "errors.ndjson"
    if errors:
        render_errors(errors, log_path)
    elif s.errors:
        typer.echo(f"errors are listed in {log_path}")
    typer.echo(as_invoked("next: " + "\n      ".join(next_steps(output))), err=True)
    typer.echo(f"run {output.run_id}")


def render_outcome(
    output: PipelineRunOutput, runs_dir: Path | None, json_out: bool, metrics_file: Path | None = None
) -> None:
    """Print a run's outcome (and write its metrics file); exit 1 unless it completed (a failed
    or partial run)."""
    status = api.status(output.run_id, runs_dir=runs_dir)
    if metrics_file is not None:
        from indexfoundry.surfaces.cli.metrics_file import run_registry, write_metrics_file

        write_metrics_file(metrics_file, run_registry(output, status.totals, [e.code for e in status.errors]))
    if json_out:
        print_json(output)
    else:
        has_errors = output.summary.errors or output.status != "completed"
        render_run(output, status.errors if has_errors else None)
    if output.status != "completed":
        raise typer.Exit(1)


@app.command("run")
def run(
    config: Path = typer.Argument(..., help="Pipeline config file (YAML or JSON).", show_default=False),
    runs_dir: Path | None = RunsDir,
    run_id: str | None = typer.Option(None, "--run-id", help="Rerun this run in place, skipping what did not change."),
    base: str | None = typer.Option(
        None,
        "--base",
        help="Incremental run: a new run reusing everything unchanged from this run id ('latest': the newest "
        "completed run of this config's pipeline).",
    ),
    force: bool = Force,
    allow_shrink: bool = AllowShrink,
    json_out: bool = Json,
    executor: Executor | None = typer.Option(
        None,
        "--executor",
        help="Where per-document and embedding work runs: local (default) or ray (extra 'ray'). "
        "Overrides the config's execution.engine; artifacts are the same either way.",
        case_sensitive=False,
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        help="Ray cluster to run on: HOST:PORT of the head node, ray://HOST:PORT, or auto (implies --executor ray).",
    ),
    metrics_file: Path | None = typer.Option(
        None,
        "--metrics-file",
        help="Write the run's figures here in Prometheus text format (node-exporter's textfile collector, "
        "a .prom file), also when the run fails or cannot start.",
        show_default=False,
    ),
) -> None:
    """Run connect → extract → normalize → index → serve for CONFIG.

    With --base, only what changed since that run is extracted and embedded again; the new
    run's artifacts are the same as a run from scratch.

    A run that comes out empty (EMPTY_CONTENT), or loses more than max_shrink (50 %) of its
    --base run's documents or chunks (RUN_SHRANK), fails and never becomes 'latest'.

    Exit code 0 when the run completed, 1 when it failed or ended partial (some documents failed),
    2 when the config is invalid (checked before a run is created), 4 when another process holds
    the run.
    """
    try:
        output = _run(config, runs_dir, run_id, force, base, allow_shrink, json_out, executor, ray_address)
    except IndexFoundryError as error:
        if metrics_file is not None:
            from indexfoundry.surfaces.cli.metrics_file import failure_registry, write_metrics_file

            write_metrics_file(metrics_file, failure_registry(error))
        raise
    render_outcome(output, runs_dir, json_out, metrics_file)


def _run(
    config: Path,
    runs_dir: Path | None,
    run_id: str | None,
    force: bool,
    base: str | None,
    allow_shrink: bool,
    json_out: bool,
    executor: Executor | None,
    ray_address: str | None,
) -> PipelineRunOutput:
    return api.pipeline_run(
        config,
        runs_dir=runs_dir,
        run_id=run_id,
        force=force,
        progress=RichProgress(enabled=None if not json_out else False),
        base=base,
        allow_shrink=allow_shrink,
        executor=executor.value if executor is not None else None,
        ray_address=ray_address,
    )
