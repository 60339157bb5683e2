"""The runs of a runs folder over time, per pipeline: what the runs dashboard shows.

Each run's figures are those of ``run list --json`` (status, creation, chunks, vectors,
errors) plus its phases' durations, whether it became ``latest``, why a refused run was refused
and the retrieval quality recorded for it (``indexfoundry eval --record``).
"""

from __future__ import annotations

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.manifests import ErrorRecord, PhaseName, RunStatus

# Codes of the run guards: a run refused with one never becomes 'latest'.
REFUSAL_CODES: tuple[str, ...] = ("RUN_SHRANK", "EMPTY_CONTENT")


class EvalRecord(Strict):
    """One retrieval evaluation recorded for a run (a line of ``logs/evals.ndjson``)."""

    recorded_at: str = Field(description="ISO 8601 time the evaluation was recorded")
    queries: int = Field(description="Judged queries evaluated")
    metrics: dict[str, dict[str, float]] = Field(description="Metric values per search mode")
    reranker: str | None = Field(default=None, description="Reranker the candidates went through, if any")
    queries_file: str | None = Field(default=None, description="Name of the queries file (or BEIR folder)")


class PhaseTime(Strict):
    """A phase of a run: its status and wall time."""

    status: str = Field(description="Phase status")
    duration_ms: int | None = Field(default=None, description="Wall time of the phase")


class RunHistoryEntry(Strict):
    """One run as the dashboard lists it."""

    run_id: str = Field(description="Run id")
    pipeline: str = Field(description="Pipeline the run belongs to")
    status: RunStatus = Field(description="Run status (as run list)")
    created_at: str = Field(description="ISO 8601 creation time")
    completed_at: str | None = Field(default=None, description="ISO 8601 completion time")
    duration_ms: int = Field(description="Wall time of the run")
    phases: dict[PhaseName, PhaseTime] = Field(description="Status and wall time per phase run")
    sources: int = Field(description="Sources fetched")
    documents: int = Field(description="Documents extracted")
    chunks: int = Field(description="Chunks created (as run list)")
    vectors: int = Field(description="Vectors indexed (as run list)")
    errors: int = Field(description="Errors met (as run list)")
    first_errors: list[ErrorRecord] = Field(description="The first errors, with code, message and suggestion")
    refused: ErrorRecord | None = Field(default=None, description="Why a guard refused the run (RUN_SHRANK, ...)")
    base_run_id: str | None = Field(default=None, description="Run this one was derived from (--base)")
    became_latest: bool = Field(description="The run was its pipeline's 'latest' once it completed")
    latest: bool = Field(description="The run is its pipeline's 'latest' now")
    evals: list[EvalRecord] = Field(default_factory=list, description="Retrieval quality recorded for the run")


class PipelineHistory(Strict):
    """The runs of one pipeline, oldest first."""

    pipeline: str = Field(description="Pipeline name")
    runs: list[RunHistoryEntry] = Field(description="Its runs, oldest first")


class RunHistory(Strict):
    """Every pipeline of a runs folder with its runs."""

    pipelines: list[PipelineHistory] = Field(description="Pipelines, the one run most recently first")
    runs_shown: int = Field(description="Runs listed (the newest ones)")
    runs_total: int = Field(description="Runs in the runs folder")


class RunDetail(Strict):
    """One run, and what changed since the run of its pipeline before it."""

    run: RunHistoryEntry = Field(description="The run")
    previous_run_id: str | None = Field(default=None, description="The run of the same pipeline before it")
    diff_markdown: str | None = Field(
        default=None, description="run diff --format markdown --include-chunks against the previous run"
    )
