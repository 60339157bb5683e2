"""``pipeline run --metrics-file``: the node-exporter textfile is valid exposition format, parsed by
prometheus-client's own parser, for a finished run and for a run that could not start."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.manifests import PhaseResult, PipelineRunOutput, PipelineSummary, Totals
from indexfoundry.surfaces.cli.metrics_file import failure_registry, run_registry, write_metrics_file

RUN_ID = "01890a5d-ac96-774b-bcce-b302099a8057"


def parsed(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_finished_run_writes_its_outcome_counts_phase_times_and_error_codes(tmp_path: Path):
    output = PipelineRunOutput(
        run_id=RUN_ID,
        status="failed",
        manifest_path=str(tmp_path / RUN_ID / "manifest.json"),
        phases={
            "connect": PhaseResult(status="completed", duration_ms=1500, artifacts_created=3),
            "extract": PhaseResult(status="failed", duration_ms=250, artifacts_created=1),
        },
        summary=PipelineSummary(sources_fetched=3, chunks_indexed=0, duration_ms=1750, errors=2),
    )
    totals = Totals(sources_fetched=3, documents_extracted=1, chunks_created=0, vectors_indexed=0, errors_encountered=2)
    path = tmp_path / "textfile" / "indexfoundry.prom"
    write_metrics_file(path, run_registry(output, totals, ["RUN_SHRANK", "PARSE_ERROR"]))
    samples = parsed(path)
    assert samples[("indexfoundry_run_success", ())] == 0
    assert samples[("indexfoundry_run_info", (("run_id", RUN_ID),))] == 1
    assert samples[("indexfoundry_run_status", (("status", "failed"),))] == 1
    assert samples[("indexfoundry_run_status", (("status", "completed"),))] == 0
    assert samples[("indexfoundry_run_duration_seconds", ())] == 1.75
    assert samples[("indexfoundry_run_phase_duration_seconds", (("phase", "connect"),))] == 1.5
    assert samples[("indexfoundry_run_documents", ())] == 1
    assert samples[("indexfoundry_run_errors", ())] == 2
    assert samples[("indexfoundry_run_error_codes", (("code", "RUN_SHRANK"),))] == 1
    assert samples[("indexfoundry_run_last_timestamp_seconds", ())] > 1.7e9
    assert [p.name for p in path.parent.iterdir()] == ["indexfoundry.prom"]  # no temporary file left


def test_a_run_that_could_not_start_writes_failure_with_its_code(tmp_path: Path):
    path = tmp_path / "indexfoundry.prom"
    path.write_text("stale\n", encoding="utf-8")
    write_metrics_file(path, failure_registry(ConfigInvalid("bad key", suggestion="fix it")))
    samples = parsed(path)
    assert samples[("indexfoundry_run_success", ())] == 0
    assert samples[("indexfoundry_run_error_codes", (("code", "CONFIG_INVALID"),))] == 1
