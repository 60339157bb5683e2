"""End to end over a folder of markdown with the hash embedder."""

from __future__ import annotations

from pathlib import Path

from indexfoundry import api
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder


def test_folder_of_markdown_runs_end_to_end_and_answers_searches(tree, runs_dir: Path, embedder: RecordingEmbedder):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=embedder)
    assert out.status == "completed"
    assert set(out.phases) == {"connect", "extract", "normalize", "index", "serve"}
    assert all(p.status == "completed" for p in out.phases.values())
    layout = RunLayout(runs_dir / out.run_id)
    chunks = list(iter_jsonl(layout.chunks))
    crumbs = {c["metadata"].get("heading_path") for c in chunks}
    assert "Theme > Changing the theme" in crumbs
    assert not any("not a heading" in (c["position"].get("section") or "") for c in chunks)
    response = api.search("change the theme colours", out.run_id, runs_dir=runs_dir, embedder=embedder)
    assert response.results[0].source.uri == "docs/guide/theme.md"
    assert response.results[0].run_id == out.run_id
