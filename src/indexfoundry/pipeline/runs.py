"""Run utilities: status and list (diff and cleanup build on these)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from indexfoundry.errors import ConfigInvalid, IndexFoundryError, RunNotFound
from indexfoundry.models.base import Strict
from indexfoundry.models.ids import LATEST
from indexfoundry.models.manifests import ErrorRecord, PhaseName, RunStatus, Totals
from indexfoundry.storage.layout import PHASES, RunLayout, is_run_id
from indexfoundry.storage.manifest import load_manifest, lock_is_held


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
    manifest = load_manifest(layout)
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
    run_id: str
    status: RunStatus
    created_at: str
    completed_at: str | None = None
    chunks: int = 0
    vectors: int = 0
    errors: int = 0


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
) -> list[RunListItem]:
    """Runs in a runs folder, newest first, filtered by status, count and creation time."""
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
            manifest = load_manifest(layout)
            effective, _ = effective_status(layout)
        except (IndexFoundryError, OSError, ValueError):
            continue
        created = _parse_time(manifest.created_at, "created_at")
        if status != "all" and effective != status:
            continue
        if before_t and created and created >= before_t:
            continue
        if after_t and created and created <= after_t:
            continue
        items.append(
            RunListItem(
                run_id=manifest.run_id,
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


def latest_run(runs_dir: Path, completed_only: bool = True) -> str | None:
    """Id of the newest run (completed or partial when ``completed_only``)."""
    for item in list_runs(runs_dir, limit=10_000):
        if not completed_only or item.status in ("completed", "partial"):
            return item.run_id
    return None


def becomes_latest(runs_dir: Path, run_id: str) -> bool:
    """Whether ``run_id``, once completed, is the newest completed or partial run: no run created
    after it has finished. (A rerun of an older run never takes ``latest`` back.)"""
    for item in list_runs(runs_dir, limit=10_000):
        if item.run_id == run_id:
            return True
        if item.status in ("completed", "partial"):
            return False
    return True


def resolve_run_id(runs_dir: Path, run_id: str) -> str:
    """The one resolver of 'latest': the newest completed (or partial) run (RUN_NOT_FOUND if
    there is none); any other id is returned as is."""
    if run_id == LATEST:
        found = latest_run(runs_dir)
        if found is None:
            raise RunNotFound(f"no completed run in {runs_dir}", suggestion="Run 'indexfoundry pipeline run CONFIG'")
        return found
    return run_id
