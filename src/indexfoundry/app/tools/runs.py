"""The orchestration and utility tools: ``indexfoundry_pipeline_run``, ``_run_status``,
``_run_list``, ``_run_diff`` and ``_run_cleanup``. Thin wrappers over ``indexfoundry.app.runs`` (what ``api`` exposes).

Surfaces may pass context keywords: ``runs_dir`` (the runs folder), ``progress`` (a progress
reporter, e.g. MCP progress notifications) and ``embedder`` (a test embedder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from indexfoundry.app import runs as api
from indexfoundry.app.tools.registry import tool
from indexfoundry.models.base import Strict
from indexfoundry.models.config import PipelineConfig, parse_pipeline_config
from indexfoundry.models.ids import RunRef
from indexfoundry.models.manifests import PipelineRunOutput
from indexfoundry.pipeline.cleanup import RunCleanupOutput
from indexfoundry.pipeline.diff import RunDiffOutput
from indexfoundry.pipeline.runs import RunListItem, RunStatusOutput


class PipelineRunInput(PipelineConfig):
    """Input of ``indexfoundry_pipeline_run``: the pipeline config plus an optional base run."""

    base_run_id: RunRef | None = Field(
        default=None,
        description="Reuse everything unchanged from this run (a run id or 'latest'): incremental run",
    )


class RunStatusInput(Strict):
    run_id: RunRef = Field(description="Run id (UUID), or 'latest' for the newest completed run")


class RunListInput(Strict):
    status: Literal["all", "completed", "running", "failed", "partial"] = Field(
        default="all", description="Only runs with this status"
    )
    limit: int = Field(default=20, ge=1, le=100, description="Most runs returned, newest first")
    before: str | None = Field(default=None, description="Only runs created before this ISO 8601 date-time")
    after: str | None = Field(default=None, description="Only runs created after this ISO 8601 date-time")


class RunListOutput(Strict):
    runs: list[RunListItem] = Field(description="Runs, newest first")


class RunDiffInput(Strict):
    run_id_a: RunRef = Field(description="First (older) run id, or 'latest'")
    run_id_b: RunRef = Field(description="Second (newer) run id, or 'latest'")
    include_chunks: bool = Field(default=False, description="Include chunk-level diff (verbose)")


class RunCleanupInput(Strict):
    older_than_days: int = Field(default=30, ge=1, description="Remove runs created more than this many days ago")
    keep_manifests: bool = Field(default=True, description="Keep manifest.json even when removing artifacts")
    dry_run: bool = Field(default=True, description="Only report what would be removed and how much space")


def _runs_dir(context: dict[str, Any]) -> str | Path | None:
    value = context.get("runs_dir")
    return value if isinstance(value, str | Path) else None


@tool(
    "indexfoundry_pipeline_run",
    PipelineRunInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=True,
    long_running=True,
)
def pipeline_run(payload: PipelineRunInput, **context: Any) -> PipelineRunOutput:
    """Run the complete pipeline (connect → extract → normalize → index → serve) end to end.

    Unchanged phases are skipped; with base_run_id the new run reuses everything unchanged
    from that run by content hash. Returns per-phase status and reused vs new counts.
    """
    data = payload.model_dump(mode="json", exclude={"base_run_id"}, exclude_unset=True)
    config = parse_pipeline_config(data, base_dir=Path.cwd())
    return api.pipeline_run(
        config,
        runs_dir=_runs_dir(context),
        progress=context.get("progress"),
        embedder=context.get("embedder"),
        base=payload.base_run_id,
    )


@tool("indexfoundry_run_status", RunStatusInput, read_only=True, destructive=False, idempotent=True, open_world=False)
def run_status(payload: RunStatusInput, **context: Any) -> RunStatusOutput:
    """Status of a pipeline run: phases, counts, timings and errors (a killed run shows 'failed')."""
    return api.status(payload.run_id, runs_dir=_runs_dir(context))


@tool("indexfoundry_run_list", RunListInput, read_only=True, destructive=False, idempotent=True, open_world=False)
def run_list(payload: RunListInput, **context: Any) -> RunListOutput:
    """List runs, newest first, filtered by status and creation time."""
    items = api.runs(
        runs_dir=_runs_dir(context),
        status_filter=payload.status,
        limit=payload.limit,
        before=payload.before,
        after=payload.after,
    )
    return RunListOutput(runs=items)


@tool("indexfoundry_run_diff", RunDiffInput, read_only=True, destructive=False, idempotent=True, open_world=False)
def run_diff(payload: RunDiffInput, **context: Any) -> RunDiffOutput:
    """Compare two runs: config keys changed, artifacts added/removed/modified per phase, and
    optionally chunks added/removed/modified per source document. Timing fields never count."""
    return api.diff(
        payload.run_id_a, payload.run_id_b, runs_dir=_runs_dir(context), include_chunks=payload.include_chunks
    )


@tool("indexfoundry_run_cleanup", RunCleanupInput, read_only=False, destructive=True, idempotent=True, open_world=False)
def run_cleanup(payload: RunCleanupInput, **context: Any) -> RunCleanupOutput:
    """Remove old runs to free disk space (dry run by default). Never removes a run being served,
    used as a base by a run in progress, locked by a pipeline, or the newest completed run."""
    return api.cleanup(
        runs_dir=_runs_dir(context),
        older_than_days=payload.older_than_days,
        keep_manifests=payload.keep_manifests,
        dry_run=payload.dry_run,
    )
