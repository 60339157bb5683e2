"""``indexfoundry run status|list``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from indexfoundry import api

if TYPE_CHECKING:
    from indexfoundry.api import RunListItem
from indexfoundry.surfaces.cli.options import Json, RunsDir
from indexfoundry.surfaces.cli.output import as_invoked, print_json

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
    if out.base_run_id:
        typer.echo(f"  base run {out.base_run_id}")
    if out.died_in_phase:
        typer.echo(f"  the process running this run died during '{out.died_in_phase}'; rerun it to resume")
    for name, phase in out.phases.items():
        duration = f"{phase.duration_ms / 1000:.2f}s" if phase.duration_ms is not None else "-"
        reuse = f"  reused {phase.reused} new {phase.new}" if phase.reused is not None else ""
        typer.echo(
            f"  {name:<10} {phase.status:<10} {duration:>8}  outputs {phase.outputs}  errors {phase.errors}{reuse}"
        )
    for error in out.errors[:20]:
        typer.echo(f"  ! {error.code} {error.uri or ''}: {error.message}")
        if error.suggestion:
            typer.echo(f"    → {as_invoked(error.suggestion)}")
    if len(out.errors) > 20:
        typer.echo(f"  … {len(out.errors) - 20} more in logs/errors.ndjson")


@app.command("list")
def list_(
    runs_dir: Path | None = RunsDir,
    status: str = typer.Option("all", "--status", help="all | completed | running | failed | partial"),
    limit: int = typer.Option(20, "--limit", min=1, max=100, help="Most runs shown."),
    before: str | None = typer.Option(None, "--before", help="Only runs created before this ISO time."),
    after: str | None = typer.Option(None, "--after", help="Only runs created after this ISO time."),
    pipeline: str | None = typer.Option(None, "--pipeline", help="Only the runs of this pipeline."),
    json_out: bool = Json,
) -> None:
    """Runs, newest first, grouped by pipeline (the config's name: 'latest:PIPELINE' is its newest
    completed run). A failed run shows the phase and error it failed with, not counts."""
    if status not in ("all", "completed", "running", "failed", "partial"):
        from indexfoundry.errors import ConfigInvalid

        raise ConfigInvalid(f"unknown status '{status}'", suggestion="all, completed, running, failed or partial")
    items = api.runs(
        runs_dir=runs_dir,
        status_filter=status,  # type: ignore[arg-type]
        limit=limit,
        before=before,
        after=after,
        pipeline=pipeline,
    )
    if json_out:
        print_json({"runs": [i.model_dump(mode="json", exclude_none=True) for i in items]})
        return
    for line in run_list_lines(items):
        typer.echo(line)


def run_list_lines(items: list[RunListItem]) -> list[str]:
    """The runs grouped by pipeline (the pipeline of the newest run first), each group newest first;
    the newest completed run of each pipeline is marked as its 'latest'."""
    if not items:
        return ["no runs"]
    groups: dict[str, list[RunListItem]] = {}
    for item in items:
        groups.setdefault(item.pipeline, []).append(item)
    lines: list[str] = []
    for name, runs in groups.items():
        latest = next((r.run_id for r in runs if r.status in ("completed", "partial")), None)
        lines.append(f"pipeline {name}" + (f"  (latest:{name} = {latest[:13]}…)" if latest else ""))
        for item in runs:
            lines.append(f"  {item.run_id}  {item.status:<9} {item.created_at}  {_outcome(item)}")
    return lines


def _outcome(item: RunListItem) -> str:
    if item.status == "failed":
        code = f" ({item.failure})" if item.failure else ""
        return f"failed in {item.failed_in or 'an unknown phase'}{code}, nothing served"
    if item.status == "running":
        return "running"
    return f"chunks {item.chunks}  vectors {item.vectors}  errors {item.errors}"


@app.command("diff")
def diff(
    run_a: str = typer.Argument(..., help="First (older) run id, or 'latest'.", show_default=False),
    run_b: str = typer.Argument(..., help="Second (newer) run id, or 'latest'.", show_default=False),
    runs_dir: Path | None = RunsDir,
    include_chunks: bool = typer.Option(
        False, "--include-chunks", help="Also list chunks added/removed/modified per document, with text diffs."
    ),
    fmt: str = typer.Option(
        "text",
        "--format",
        help="text | markdown (a pull request comment: counts, changed documents and chunks) | json",
    ),
    json_out: bool = Json,
    exit_code: bool = typer.Option(False, "--exit-code", help="Exit 1 when the runs differ (like git diff)."),
) -> None:
    """What changed from run A to run B: config keys, artifacts per phase and, optionally, chunks.

    Timing fields (start/end times, durations) never count as differences.
    """
    from indexfoundry.errors import ConfigInvalid

    if fmt not in ("text", "markdown", "json"):
        raise ConfigInvalid(f"unknown format '{fmt}'", suggestion="Use text, markdown or json")
    markdown = fmt == "markdown" and not json_out
    # A pull request comment always names the changed documents and chunks.
    out = api.diff(run_a, run_b, runs_dir=runs_dir, include_chunks=include_chunks or markdown)
    if json_out or fmt == "json":
        print_json(out)
    elif markdown:
        typer.echo(api.render_diff(out, markdown=True, with_text_diffs=include_chunks), nl=False)
    else:
        typer.echo(api.render_diff(out), nl=False)
    if exit_code and not out.identical:
        raise typer.Exit(1)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


@app.command("check-fresh")
def check_fresh(
    run_id: str = typer.Argument(..., help="Run id, or 'latest'.", show_default=False),
    runs_dir: Path | None = RunsDir,
    uris: list[str] = typer.Option([], "--uri", help="Check only this source uri (repeatable)."),
    sample: float | None = typer.Option(
        None, "--sample", min=0.001, max=1.0, help="Check this share of the sources (deterministic choice)."
    ),
    max_seconds: float = typer.Option(30.0, "--max-seconds", min=0.1, max=3600, help="Stop checking after this."),
    json_out: bool = Json,
    exit_code: bool = typer.Option(False, "--exit-code", help="Exit 1 when a source changed or is gone."),
) -> None:
    """Which sources changed since the run read them: files by hash, URLs by conditional request."""
    out = api.check_freshness(run_id, runs_dir=runs_dir, uris=uris or None, sample=sample, max_seconds=max_seconds)
    if json_out:
        print_json(out)
    else:
        share = f" (a {out.sample:.0%} sample)" if out.sample is not None else ""
        typer.echo(
            f"run {out.run_id}: {out.checked} of {out.sources} sources checked{share}, {out.unchanged} unchanged"
        )
        for entry in out.changed:
            typer.echo(f"  {entry.status:<8} {entry.uri}  ({entry.how})")
        for entry in out.errors:
            typer.echo(f"  error    {entry.uri}  ({entry.error})")
        if out.timed_out:
            typer.echo("  stopped at --max-seconds: the rest were not checked", err=True)
    if exit_code and out.changed:
        raise typer.Exit(1)


@app.command("cleanup")
def cleanup(
    runs_dir: Path | None = RunsDir,
    older_than_days: int = typer.Option(30, "--older-than-days", min=1, help="Remove runs older than this."),
    keep_manifests: bool = typer.Option(
        True, "--keep-manifests/--no-keep-manifests", help="Keep manifest.json and config.json of removed runs."
    ),
    dry_run: bool = typer.Option(
        True, "--dry-run/--no-dry-run", help="Only show what would be removed (default). --no-dry-run removes."
    ),
    max_runs: int | None = typer.Option(
        None, "--max-runs", min=1, help="Keep at most this many runs, oldest removed first (default: storage.max_runs)."
    ),
    json_out: bool = Json,
) -> None:
    """Remove old runs to free disk space. Dry run unless --no-dry-run.

    Never removes a run that is being served, used as the base of a run in progress, being
    worked on by a pipeline, or the newest completed run; never touches anything outside the
    runs folder.
    """
    out = api.cleanup(
        runs_dir=runs_dir,
        older_than_days=older_than_days,
        keep_manifests=keep_manifests,
        dry_run=dry_run,
        max_runs=max_runs,
    )
    if json_out:
        print_json(out)
        return
    verb = "would remove" if out.dry_run else "removed"
    for item in out.removed:
        what = "artifacts of" if item.kept_manifest else "run"
        typer.echo(
            f"{verb} {what} {item.run_id}  {item.status:<9} {item.created_at}  {_size(item.bytes)}  ({item.reason})"
        )
    for kept in out.protected:
        typer.echo(f"kept {kept.run_id}: {kept.reason}")
    typer.echo(f"{verb} {len(out.removed)} of {out.runs_examined} runs, {_size(out.bytes_freed)}")
    if out.dry_run and out.removed:
        typer.echo("dry run: nothing was removed; pass --no-dry-run to remove")
