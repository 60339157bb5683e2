"""``pipeline run --metrics-file PATH``: the run's figures for node-exporter's textfile collector.

The file is the Prometheus text exposition format, replaced atomically (the library writes a
temporary file beside it and renames it), so a scrape never reads half a file and a cron job
is monitored with no server. It is written for every outcome: a completed, partial or failed
run (a refused one names its code, e.g. ``RUN_SHRANK``), and a run that could not start
(``CONFIG_INVALID``, ``RUN_LOCKED``): ``indexfoundry_run_success 0`` with the code.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from indexfoundry.errors import IndexFoundryError

if TYPE_CHECKING:
    from indexfoundry.models.manifests import PipelineRunOutput, Totals

_STATUSES = ("completed", "partial", "failed")


def _gauge(registry: CollectorRegistry, name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
    return Gauge(f"indexfoundry_run_{name}", doc, list(labels), registry=registry)


def _outcome(registry: CollectorRegistry, success: bool, codes: list[str]) -> None:
    _gauge(registry, "success", "1 when the last pipeline run completed, else 0").set(1 if success else 0)
    _gauge(registry, "last_timestamp_seconds", "When the last pipeline run ended (Unix time)").set(time.time())
    errors = _gauge(registry, "error_codes", "Errors of the last pipeline run, by error code", ("code",))
    for code in sorted(set(codes)):
        errors.labels(code=code).set(codes.count(code))


def run_registry(output: PipelineRunOutput, totals: Totals, codes: list[str]) -> CollectorRegistry:
    """The figures of a finished run: outcome, status, duration per phase, counts, error codes."""
    registry = CollectorRegistry()
    _outcome(registry, output.status == "completed", codes)
    _gauge(registry, "info", "The last pipeline run (value 1)", ("run_id",)).labels(run_id=output.run_id).set(1)
    state = _gauge(registry, "status", "Status of the last pipeline run (1 for its status)", ("status",))
    for name in _STATUSES:
        state.labels(status=name).set(1 if output.status == name else 0)
    _gauge(registry, "duration_seconds", "Wall time of the last pipeline run").set(output.summary.duration_ms / 1000)
    phases = _gauge(registry, "phase_duration_seconds", "Wall time of each phase of the last run", ("phase",))
    for name, phase in output.phases.items():
        phases.labels(phase=name).set(phase.duration_ms / 1000)
    for name, value in (
        ("sources", totals.sources_fetched),
        ("documents", totals.documents_extracted),
        ("chunks", totals.chunks_created),
        ("vectors", totals.vectors_indexed),
        ("errors", totals.errors_encountered),
    ):
        _gauge(registry, name, f"{name.capitalize()} of the last pipeline run").set(value)
    return registry


def failure_registry(error: IndexFoundryError) -> CollectorRegistry:
    """The figures of a run that could not start or stopped with an error."""
    registry = CollectorRegistry()
    _outcome(registry, False, [error.code])
    return registry


def write_metrics_file(path: Path, registry: CollectorRegistry) -> None:
    """Replace ``path`` atomically with ``registry`` in the text exposition format."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry)
