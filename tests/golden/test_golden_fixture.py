"""Pins the chunks and manifests of a small fixture corpus.

Regenerate only on purpose: ``python -m pytest tests/golden --update-golden``, then review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.models.manifests import TIMING_FIELDS
from indexfoundry.storage.layout import RunLayout
from tests.fakes import RecordingEmbedder

HERE = Path(__file__).parent
EXPECTED = HERE / "expected"
# config hashes cover config.json, which holds the fixture folder's absolute path (the checkout's place).
VOLATILE = TIMING_FIELDS | {
    "run_id",
    "tool_versions",
    "fingerprint",
    "tool_version",
    "indexfoundry_version",
    "config_hash",
}
PINNED = [
    "raw/raw_manifest.jsonl",
    "extracted/documents.jsonl",
    "normalized/chunks.jsonl",
    "normalized/chunk_stats.json",
    "normalized/dedupe_report.json",
    "indexed/vector_manifest.json",
]


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


# extraction_report.json names the extractors' library versions, which move with every release
# the major-version pins admit: its hash, and the hashes that cover it (extract's outputs,
# normalize's inputs), are left out; the report's other figures are pinned by the phase stats.
VERSIONED_ARTIFACT = "extracted/extraction_report.json"


def _manifest(layout: RunLayout) -> str:
    data = _stable(json.loads(layout.manifest.read_text()))
    for artifact in data["phases"]["extract"]["artifacts"]:
        if artifact["path"] == VERSIONED_ARTIFACT:
            artifact["sha256"] = "(names library versions)"
    data["phases"]["extract"]["outputs"]["sha256"] = f"(covers {VERSIONED_ARTIFACT})"
    data["phases"]["normalize"]["inputs"]["sha256"] = f"(covers {VERSIONED_ARTIFACT})"
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> RunLayout:
    runs = tmp_path_factory.mktemp("golden-runs")
    out = api.pipeline_run(HERE / "fixture" / "pipeline.yaml", runs_dir=runs, embedder=RecordingEmbedder())
    assert out.status == "completed"
    return RunLayout(runs / out.run_id)


@pytest.mark.parametrize("artifact", PINNED)
def test_fixture_artifacts_match_the_golden_files(golden_run: RunLayout, artifact: str, update_golden: bool):
    actual = (golden_run.root / artifact).read_text(encoding="utf-8")
    expected_path = EXPECTED / artifact.replace("/", "__")
    if update_golden:
        expected_path.write_text(actual, encoding="utf-8")
    assert expected_path.is_file(), "no golden file: run pytest tests/golden --update-golden"
    assert actual == expected_path.read_text(encoding="utf-8")


def test_fixture_manifest_matches_the_golden_manifest(golden_run: RunLayout, update_golden: bool):
    actual = _manifest(golden_run)
    expected_path = EXPECTED / "manifest.json"
    if update_golden:
        expected_path.write_text(actual, encoding="utf-8")
    assert actual == expected_path.read_text(encoding="utf-8")
