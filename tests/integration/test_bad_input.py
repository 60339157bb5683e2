"""A document that cannot be read fails alone; the run goes on and ends partial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder


def _errors(layout: RunLayout) -> list[dict]:
    return [json.loads(line) for line in layout.errors_log.read_text().splitlines()]


def test_an_undecodable_file_is_a_parse_error_and_the_run_ends_partial(tree, runs_dir: Path):
    docs = tree({**SAMPLE_DOCS, "broken.md": b"\xff\xfe\x00\xd8\x00binary\x00\x00\x9c"})
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert out.status == "partial"
    layout = RunLayout(runs_dir / out.run_id)
    errors = _errors(layout)
    assert [(e["code"], e["uri"], e["phase"]) for e in errors] == [("PARSE_ERROR", "docs/broken.md", "extract")]
    assert out.summary.chunks_indexed > 0  # the other documents were indexed
    status = api.status(out.run_id, runs_dir=runs_dir)
    assert status.status == "partial" and status.errors[0].code == "PARSE_ERROR"


def test_stop_on_error_fails_the_run_at_the_first_broken_document(tree, runs_dir: Path):
    docs = tree({**SAMPLE_DOCS, "broken.md": b"\x00\x01\x02\xff\xfe\x00"})
    out = api.pipeline_run(folder_config(docs, stop_on_error=True), runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert out.status == "failed"
    assert out.phases["extract"].status == "failed"
    assert "index" not in out.phases
    assert api.status(out.run_id, runs_dir=runs_dir).phases["extract"].status == "failed"


def test_an_empty_document_is_reported_as_empty_content(tree, runs_dir: Path):
    docs = tree({**SAMPLE_DOCS, "empty.md": "   \n"})
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert out.status == "partial"
    assert [e["code"] for e in _errors(RunLayout(runs_dir / out.run_id))] == ["EMPTY_CONTENT"]


def test_a_missing_source_folder_is_refused_before_a_run_exists(tree, runs_dir: Path, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    config = folder_config(docs)
    config["connect"]["sources"].append({"type": "folder", "path": str(tmp_path / "missing")})
    with pytest.raises(ConfigInvalid):
        api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert list(runs_dir.iterdir()) == []
