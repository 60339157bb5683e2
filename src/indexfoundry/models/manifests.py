"""Audit records: the run manifest, phase manifests, errors and the pipeline's output."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from indexfoundry.errors import ErrorCode, IndexFoundryError
from indexfoundry.models.base import Strict

RunStatus = Literal["running", "completed", "failed", "partial"]
PhaseStatus = Literal["pending", "running", "completed", "failed"]
PhaseName = Literal["connect", "extract", "normalize", "index", "serve"]

# Manifest keys that hold times or durations: never content, ignored by `run diff`.
TIMING_FIELDS: frozenset[str] = frozenset(
    {"created_at", "completed_at", "started_at", "duration_ms", "timing", "fetched_at", "embedded_at"}
)


class ErrorRecord(Strict):
    """One error met during a phase (also one line of ``logs/errors.ndjson``)."""

    code: ErrorCode = Field(description="Error code (e.g. CONFIG_INVALID, FETCH_FAILED)")
    message: str = Field(description="What went wrong")
    phase: PhaseName | None = Field(default=None, description="Phase the error happened in")
    uri: str | None = Field(default=None, description="Source or document the error concerns")
    recoverable: bool = Field(default=False, description="Whether retrying may succeed")
    suggestion: str | None = Field(default=None, description="What to try next")

    @classmethod
    def from_error(
        cls, error: IndexFoundryError, phase: PhaseName | None = None, uri: str | None = None
    ) -> ErrorRecord:
        return cls(
            code=error.code,
            message=error.message,
            phase=phase,
            uri=uri,
            recoverable=error.recoverable,
            suggestion=error.suggestion,
        )


# Version 2: a phase's per-item files (raw files, extracted texts) are named in one file list
# artifact instead of one by one, and inputs/outputs keep the hash of their hash list, so a
# manifest's size no longer grows with the corpus. Version 1 manifests are still read.
MANIFEST_SCHEMA_VERSION = 2


class HashList(Strict):
    """Count of a phase's inputs or outputs and one hash standing for all of their hashes."""

    count: int = Field(default=0, description="Number of items")
    sha256: str | None = Field(
        default=None, description="SHA-256 of the items' SHA-256 hashes, sorted, as a canonical JSON list"
    )
    hashes: list[str] | None = Field(
        default=None, description="SHA-256 of each item, sorted (manifests of schema version 1 only)"
    )


class ArtifactRecord(Strict):
    """A file a phase wrote, with its hash so a later run can verify it."""

    path: str = Field(description="Path relative to the run folder")
    sha256: str = Field(description="SHA-256 of the file")
    records: int | None = Field(default=None, description="Number of records, for JSONL files")
    files: int | None = Field(
        default=None,
        description="Set on a file list (``<phase folder>/files.sha256``): the number of per-item files "
        "(raw files, extracted texts) it names, one ``<sha256>  <path>`` line each, every one "
        "verified with it",
    )


class PhaseManifest(Strict):
    """The record of one phase of a run; complete only once status is 'completed'."""

    started_at: str = Field(description="ISO 8601 start time")
    completed_at: str | None = Field(default=None, description="ISO 8601 end time")
    duration_ms: int | None = Field(default=None, description="Wall time of the phase")
    status: PhaseStatus = Field(description="Phase status")
    phase_version: str = Field(description="Version of this phase's implementation")
    tool_version: str = Field(description="IndexFoundry version that ran the phase")
    tool_versions: dict[str, str] = Field(default_factory=dict, description="Library and tool versions")
    config_hash: str = Field(description="Hash of the phase's config slice")
    fingerprint: str = Field(description="Hash of phase, version, config slice, inputs and tool versions")
    inputs: HashList = Field(default_factory=HashList)
    outputs: HashList = Field(default_factory=HashList)
    artifacts: list[ArtifactRecord] = Field(default_factory=list, description="Files written")
    stats: dict[str, Any] = Field(default_factory=dict, description="Phase statistics")
    details: dict[str, Any] = Field(
        default_factory=dict, description="Non-content details (fetch times, reuse counts...)"
    )
    errors: list[ErrorRecord] = Field(default_factory=list, description="Errors met (documents skipped)")


class Totals(Strict):
    sources_fetched: int = 0
    documents_extracted: int = 0
    chunks_created: int = 0
    vectors_indexed: int = 0
    errors_encountered: int = 0


class Timing(Strict):
    total_duration_ms: int = 0
    phase_durations: dict[str, int] = Field(default_factory=dict)


class RunManifest(Strict):
    """``manifest.json``: the audit record of a run, written atomically after every phase."""

    schema_version: int = Field(default=MANIFEST_SCHEMA_VERSION, description="Manifest format version")
    run_id: str = Field(description="UUID v7 (time-ordered)")
    created_at: str = Field(description="ISO 8601 creation time")
    completed_at: str | None = Field(default=None, description="ISO 8601 completion time")
    status: RunStatus = Field(description="Run status")
    config_hash: str = Field(description="SHA-256 of config.json's canonical form")
    indexfoundry_version: str = Field(description="Version that created the run")
    base_run_id: str | None = Field(default=None, description="Run this one was derived from")
    pipeline: str | None = Field(
        default=None,
        description="Pipeline the run belongs to ('latest:<pipeline>' is its newest completed run); "
        "unset in runs made before pipelines were recorded (their collection's name stands in)",
    )
    current_phase: PhaseName | None = Field(default=None, description="Phase running now, if any")
    phases: dict[PhaseName, PhaseManifest] = Field(default_factory=dict)
    totals: Totals = Field(default_factory=Totals)
    timing: Timing = Field(default_factory=Timing)


class ErrorBody(Strict):
    code: str
    message: str
    details: Any | None = None
    recoverable: bool
    suggestion: str | None = None


class TextContent(Strict):
    type: Literal["text"] = "text"
    text: str


class ToolError(Strict):
    """The error response of a tool (MCP) and, as ``error``, of the HTTP API."""

    isError: Literal[True] = True
    content: list[TextContent]
    error: ErrorBody

    @classmethod
    def from_error(cls, error: IndexFoundryError) -> ToolError:
        return cls(content=[TextContent(text=error.one_line())], error=ErrorBody(**error.to_dict()))


PhaseResultStatus = Literal["completed", "skipped", "failed"]


class PhaseResult(Strict):
    """Outcome of one phase in a pipeline run."""

    status: PhaseResultStatus
    duration_ms: int
    artifacts_created: int
    errors: list[str] = Field(default_factory=list)
    reused: int = Field(default=0, description="Items reused unchanged (cache hits, skipped work)")
    new: int = Field(default=0, description="Items computed in this run")


class PipelineSummary(Strict):
    sources_fetched: int
    chunks_indexed: int
    duration_ms: int
    errors: int


class PipelineRunOutput(Strict):
    """What ``indexfoundry_pipeline_run`` answers: the run, its status and its phases."""

    run_id: str
    status: Literal["completed", "partial", "failed"]
    manifest_path: str
    phases: dict[PhaseName, PhaseResult]
    summary: PipelineSummary
    retrieval_endpoint: str | None = None
