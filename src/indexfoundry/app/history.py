"""The runs dashboard's use cases: every run of a runs folder per pipeline, one run with its diff
against the run before it, and recording an evaluation's results into the run it measured.

A run's pipeline is the one its manifest records (``run list``'s ``pipeline``: the config's
name), so the dashboard groups runs as ``latest:<pipeline>`` resolves them.
"""

from __future__ import annotations

from pathlib import Path

from indexfoundry.errors import IndexFoundryError, RunNotFound
from indexfoundry.models.history import (
    REFUSAL_CODES,
    EvalRecord,
    PhaseTime,
    PipelineHistory,
    RunDetail,
    RunHistory,
    RunHistoryEntry,
)
from indexfoundry.models.manifests import ErrorRecord, RunManifest, RunStatus
from indexfoundry.pipeline.diff import render_markdown, run_diff
from indexfoundry.pipeline.runs import list_runs
from indexfoundry.storage.atomic import append_ndjson, iter_jsonl
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.layout import RunLayout, is_run_id
from indexfoundry.storage.manifest import load_manifest

MAX_RUNS = 200  # the newest runs the dashboard lists
SHOWN_ERRORS = 5


def _entry(layout: RunLayout, manifest: RunManifest, status: RunStatus, pipeline: str) -> RunHistoryEntry:
    errors: list[ErrorRecord] = [e for phase in manifest.phases.values() for e in phase.errors]
    refused = next((e for e in errors if e.code in REFUSAL_CODES), None)
    totals = manifest.totals
    return RunHistoryEntry(
        run_id=manifest.run_id,
        pipeline=pipeline,
        status=status,
        created_at=manifest.created_at,
        completed_at=manifest.completed_at,
        duration_ms=manifest.timing.total_duration_ms,
        phases={name: PhaseTime(status=p.status, duration_ms=p.duration_ms) for name, p in manifest.phases.items()},
        sources=totals.sources_fetched,
        documents=totals.documents_extracted,
        chunks=totals.chunks_created,
        vectors=totals.vectors_indexed,
        errors=totals.errors_encountered,
        first_errors=errors[:SHOWN_ERRORS],
        refused=refused,
        base_run_id=manifest.base_run_id,
        became_latest=False,
        latest=False,
        evals=read_evals(layout),
    )


def read_evals(layout: RunLayout) -> list[EvalRecord]:
    """The evaluations recorded for a run, oldest first (unreadable lines are skipped)."""
    if not layout.evals_log.is_file():
        return []
    records = []
    for line in iter_jsonl(layout.evals_log):
        try:
            records.append(EvalRecord.model_validate(line))
        except ValueError:
            continue
    return records


def _mark_latest(runs: list[RunHistoryEntry]) -> None:
    """``latest``: the newest completed (or partial) run, as ``latest`` resolves; ``became_latest``:
    no run created after it had completed before it did (a rerun never takes 'latest' back)."""
    done = [r for r in runs if r.status in ("completed", "partial")]
    if done:
        max(done, key=lambda r: (r.created_at, r.run_id)).latest = True
    for run in done:
        later = [r for r in done if (r.created_at, r.run_id) > (run.created_at, run.run_id)]
        run.became_latest = all((r.completed_at or "") > (run.completed_at or "") for r in later)


def _entries(root: Path, limit: int) -> tuple[list[tuple[str, RunHistoryEntry]], int]:
    items = list_runs(root, limit=10_000)
    entries: list[tuple[str, RunHistoryEntry]] = []
    for item in items[:limit]:
        layout = RunLayout.for_run(root, item.run_id)
        try:
            manifest = load_manifest(layout)
        except (IndexFoundryError, OSError, ValueError):
            continue
        entries.append((item.pipeline, _entry(layout, manifest, item.status, item.pipeline)))
    return entries, len(items)


def run_history(root: Path, limit: int = MAX_RUNS) -> RunHistory:
    """The newest ``limit`` runs of ``root`` grouped by pipeline, each pipeline's runs oldest first."""
    entries, total = _entries(root, limit)
    groups: dict[str, list[RunHistoryEntry]] = {}
    for key, entry in entries:  # newest first: the first pipeline met is the one run most recently
        groups.setdefault(key, []).append(entry)
    pipelines = []
    for runs in groups.values():
        runs.sort(key=lambda r: (r.created_at, r.run_id))
        _mark_latest(runs)
        pipelines.append(PipelineHistory(pipeline=runs[0].pipeline, runs=runs))
    return RunHistory(pipelines=pipelines, runs_shown=len(entries), runs_total=total)


def run_detail(root: Path, run_id: str) -> RunDetail:
    """One run and its diff (``run diff --format markdown --include-chunks``) against the run of
    the same pipeline created before it."""
    if not is_run_id(run_id):
        raise RunNotFound(f"{run_id!r} is not a run id", suggestion="Pick a run on the runs page")
    for pipeline in run_history(root).pipelines:
        ids = [r.run_id for r in pipeline.runs]
        if run_id not in ids:
            continue
        at = ids.index(run_id)
        previous = ids[at - 1] if at > 0 else None
        markdown = None
        if previous is not None:
            diff = run_diff(RunLayout.for_run(root, previous), RunLayout.for_run(root, run_id), include_chunks=True)
            markdown = render_markdown(diff, with_text_diffs=True)
        return RunDetail(run=pipeline.runs[at], previous_run_id=previous, diff_markdown=markdown)
    raise RunNotFound(f"run {run_id} is not among the runs listed", suggestion="Pick a run on the runs page")


def record_eval(
    root: Path, run_id: str, queries: int, metrics: dict[str, dict[str, float]], **extra: str | None
) -> EvalRecord:
    """Append an evaluation's results to the run it measured (``logs/evals.ndjson``)."""
    layout = RunLayout.existing(root, run_id)
    record = EvalRecord(recorded_at=utc_now(), queries=queries, metrics=metrics, **extra)
    append_ndjson(layout.evals_log, record.model_dump(mode="json", exclude_none=True))
    return record
