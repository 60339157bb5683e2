"""Run utilities: status and list (diff and cleanup build on these), and what 'latest' names.

Runs belong to pipelines (``RunManifest.pipeline``: the config's ``name``, by default its file's
name). ``latest:<pipeline>`` is the newest completed (or partial) run of that pipeline; a bare
``latest`` is the same when the runs folder holds one pipeline, and CONFIG_INVALID listing them
when it holds several, so that running a second config in a folder never changes silently what
a search, a server or an agent following ``latest`` answers from.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from indexfoundry.errors import ConfigInvalid, IndexFoundryError, RunNotFound
from indexfoundry.models.base import Strict
from indexfoundry.models.ids import LATEST, is_latest, latest_of, latest_pipeline, pipeline_name_from
from indexfoundry.models.manifests import ErrorRecord, PhaseName, RunManifest, RunStatus, Totals
from indexfoundry.storage.layout import PHASES, RunLayout, is_run_id
from indexfoundry.storage.manifest import load_manifest, lock_is_held, read_frozen_config, read_manifest


class PhaseStatusView(Strict):
    status: Literal["pending", "running", "completed", "failed"] = Field(description="Phase status")
    started_at: str | None = Field(default=None, description="ISO 8601 start time")
    completed_at: str | None = Field(default=None, description="ISO 8601 end time")
    duration_ms: int | None = Field(default=None, description="Wall time of the phase")
    outputs: int = Field(default=0, description="Output count")
    errors: int = Field(default=0, description="Errors met")
    reused: int | None = Field(default=None, description="Items reused (base run, caches) when it last ran")
    new: int | None = Field(default=None, description="Items computed when it last ran")
    stats: dict[str, object] = Field(default_factory=dict, description="Phase statistics")


class RunStatusOutput(Strict):
    """What ``indexfoundry_run_status`` answers: phases, counts, timings and errors."""

    run_id: str
    status: RunStatus
    created_at: str
    completed_at: str | None = None
    base_run_id: str | None = None
    died_in_phase: PhaseName | None = Field(default=None, description="Phase a killed run stopped in")
    phases: dict[PhaseName, PhaseStatusView]
    totals: Totals
    total_duration_ms: int
    errors: list[ErrorRecord]
    path: str


def effective_status(layout: RunLayout) -> tuple[RunStatus, PhaseName | None]:
    """The run's status; a 'running' run whose process is gone is reported 'failed'."""
    manifest = read_manifest(layout)
    if manifest.status == "running" and not lock_is_held(layout):
        return "failed", manifest.current_phase
    return manifest.status, None


def run_status(layout: RunLayout) -> RunStatusOutput:
    manifest = load_manifest(layout)
    status, died = effective_status(layout)
    phases: dict[PhaseName, PhaseStatusView] = {}
    errors: list[ErrorRecord] = []
    for name in PHASES:
        phase = manifest.phases.get(name)  # type: ignore[call-overload]
        if phase is None:
            phases[name] = PhaseStatusView(status="pending")  # type: ignore[index]
            continue
        view_status = phase.status
        if died == name:
            view_status = "failed"
        phases[name] = PhaseStatusView(  # type: ignore[index]
            status=view_status,
            started_at=phase.started_at,
            completed_at=phase.completed_at,
            duration_ms=phase.duration_ms,
            outputs=phase.outputs.count,
            errors=len(phase.errors),
            reused=phase.details.get("reused"),
            new=phase.details.get("new"),
            stats=phase.stats,
        )
        errors.extend(phase.errors)
    return RunStatusOutput(
        run_id=manifest.run_id,
        status=status,
        created_at=manifest.created_at,
        completed_at=manifest.completed_at,
        base_run_id=manifest.base_run_id,
        died_in_phase=died,
        phases=phases,
        totals=manifest.totals,
        total_duration_ms=manifest.timing.total_duration_ms,
        errors=errors,
        path=str(layout.root),
    )


class RunListItem(Strict):
    run_id: str = Field(description="The run's id")
    pipeline: str = Field(description="Pipeline the run belongs to ('latest:<pipeline>' names its newest run)")
    status: RunStatus = Field(description="Run status (a run whose process died is 'failed')")
    created_at: str = Field(description="ISO 8601 creation time")
    completed_at: str | None = Field(default=None, description="ISO 8601 completion time")
    chunks: int = Field(default=0, description="Chunks the normalize phase made")
    vectors: int = Field(default=0, description="Vectors the index phase wrote")
    errors: int = Field(default=0, description="Errors met")
    failed_in: PhaseName | None = Field(default=None, description="Phase a failed run stopped in")
    failure: str | None = Field(default=None, description="Error code that failed the run")


def pipeline_of(layout: RunLayout, manifest: RunManifest) -> str:
    """The pipeline a run belongs to: recorded in its manifest, else (a run made before pipelines
    were recorded) its collection's name, read from its config.json."""
    if manifest.pipeline:
        return manifest.pipeline
    try:
        collection = read_frozen_config(layout).get("index", {}).get("vector_db", {}).get("collection")
    except (IndexFoundryError, OSError, ValueError, AttributeError):
        collection = None
    return pipeline_name_from(str(collection or "indexfoundry"))


def _failure(manifest: RunManifest, died: PhaseName | None) -> tuple[PhaseName | None, str | None]:
    """Where a failed run stopped and the code of the error that stopped it."""
    for name in reversed(PHASES):
        phase = manifest.phases.get(name)  # type: ignore[call-overload]
        if phase is not None and phase.status == "failed":
            return name, (phase.errors[-1].code if phase.errors else None)  # type: ignore[return-value]
    return died or manifest.current_phase, None


def _parse_time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigInvalid(
            f"--{name} '{value}' is not an ISO 8601 date-time", suggestion="e.g. 2026-11-30T00:00:00Z"
        ) from None


def list_runs(
    runs_dir: Path,
    status: Literal["all", "completed", "running", "failed", "partial"] = "all",
    limit: int = 20,
    before: str | None = None,
    after: str | None = None,
    pipeline: str | None = None,
) -> list[RunListItem]:
    """Runs in a runs folder, newest first, filtered by status, count, creation time and pipeline."""
    before_t = _parse_time(before, "before")
    after_t = _parse_time(after, "after")
    items: list[RunListItem] = []
    if not runs_dir.is_dir():
        return items
    for path in runs_dir.iterdir():
        if not is_run_id(path.name) or not (path / "manifest.json").is_file():
            continue
        layout = RunLayout(path)
        try:
            manifest = read_manifest(layout)
            effective, died = effective_status(layout)
        except (IndexFoundryError, OSError, ValueError):
            continue
        created = _parse_time(manifest.created_at, "created_at")
        if status != "all" and effective != status:
            continue
        belongs = pipeline_of(layout, manifest)
        if pipeline is not None and belongs != pipeline:
            continue
        if before_t and created and created >= before_t:
            continue
        if after_t and created and created <= after_t:
            continue
        failed_in, failure = _failure(manifest, died) if effective == "failed" else (None, None)
        items.append(
            RunListItem(
                run_id=manifest.run_id,
                pipeline=belongs,
                failed_in=failed_in,
                failure=failure,
                status=effective,
                created_at=manifest.created_at,
                completed_at=manifest.completed_at,
                chunks=manifest.totals.chunks_created,
                vectors=manifest.totals.vectors_indexed,
                errors=manifest.totals.errors_encountered,
            )
        )
    items.sort(key=lambda item: (item.created_at, item.run_id), reverse=True)
    return items[:limit]


def _completed(item: RunListItem) -> bool:
    return item.status in ("completed", "partial")


def pipelines(runs_dir: Path) -> dict[str, RunListItem]:
    """Each pipeline with a completed (or partial) run in ``runs_dir``, with its newest such run."""
    newest: dict[str, RunListItem] = {}
    for item in list_runs(runs_dir, limit=1_000_000):
        if _completed(item):
            newest.setdefault(item.pipeline, item)
    return newest


def ambiguous_latest(runs_dir: Path, newest: dict[str, RunListItem]) -> ConfigInvalid:
    """The refusal of a bare 'latest' in a folder holding several pipelines, listing them."""
    listed = ", ".join(f"{name} (newest run {item.run_id[:13]}…, {item.created_at})" for name, item in newest.items())
    named = " or ".join(latest_of(name) for name in newest)
    return ConfigInvalid(
        f"'latest' is ambiguous: {runs_dir} holds {len(newest)} pipelines: {listed}",
        suggestion=(
            f"Name one: {named} (e.g. --run-id {latest_of(next(iter(newest)))}), or use a runs folder "
            "per pipeline; 'indexfoundry run list' groups the runs by pipeline"
        ),
        details={"pipelines": sorted(newest)},
    )


def latest_run(runs_dir: Path, completed_only: bool = True, pipeline: str | None = None) -> str | None:
    """Id of the newest run (completed or partial when ``completed_only``) of ``pipeline``;
    without one, of the folder's one pipeline (CONFIG_INVALID when it holds several)."""
    if pipeline is not None or not completed_only:
        for item in list_runs(runs_dir, limit=1_000_000, pipeline=pipeline):
            if not completed_only or _completed(item):
                return item.run_id
        return None
    newest = pipelines(runs_dir)
    if len(newest) > 1:
        raise ambiguous_latest(runs_dir, newest)
    return next(iter(newest.values())).run_id if newest else None


def pinned_latest(runs_dir: Path, ref: str) -> str:
    """``ref`` as a follower keeps it: a bare 'latest' becomes 'latest:<pipeline>' of the folder's
    one pipeline (so that a second pipeline later never takes it over); else ``ref`` itself."""
    if ref != LATEST:
        return ref
    newest = pipelines(runs_dir)
    if len(newest) > 1:
        raise ambiguous_latest(runs_dir, newest)
    return latest_of(next(iter(newest))) if newest else ref


def becomes_latest(runs_dir: Path, run_id: str) -> bool:
    """Whether ``run_id``, once completed, is the newest completed or partial run of its pipeline:
    no run of that pipeline created after it has finished. (A rerun of an older run never takes
    ``latest`` back.)"""
    layout = RunLayout.for_run(runs_dir, run_id)
    pipeline = pipeline_of(layout, read_manifest(layout)) if layout.manifest.is_file() else None
    for item in list_runs(runs_dir, limit=1_000_000, pipeline=pipeline):
        if item.run_id == run_id:
            return True
        if _completed(item):
            return False
    return True


def resolve_run_id(runs_dir: Path, run_id: str) -> str:
    """The one resolver of 'latest' and 'latest:<pipeline>': the newest completed (or partial)
    run (RUN_NOT_FOUND if there is none); any other id is returned as is."""
    if not is_latest(run_id):
        return run_id
    pipeline = latest_pipeline(run_id)
    found = latest_run(runs_dir, pipeline=pipeline)
    if found is not None:
        return found
    if pipeline is None:
        raise RunNotFound(f"no completed run in {runs_dir}", suggestion="Run 'indexfoundry pipeline run CONFIG'")
    known = sorted(pipelines(runs_dir))
    raise RunNotFound(
        f"no completed run of pipeline '{pipeline}' in {runs_dir}",
        suggestion=(
            f"Pipelines with a completed run here: {', '.join(known)}"
            if known
            else "Run 'indexfoundry pipeline run CONFIG'"
        ),
    )
