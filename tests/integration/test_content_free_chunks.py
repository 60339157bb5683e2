"""On the real MkDocs docs, indexed as docs mode indexes them: no chunk is made only of link
definitions or other residue, and "how to add a custom theme" finds the section that answers it,
not the link block that ends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.phases.normalize.contentless import content_free
from indexfoundry.storage.layout import RunLayout

QUESTION = "how to add a custom theme"
ANSWER = "The bare minimum required for a custom theme is a `main.html`"


def _run(corpora: Path, runs: Path, model: str) -> tuple[str, RunLayout]:
    from indexfoundry.app.answers import folder_run_config

    folder = corpora / "markdown" / "mkdocs-1.4.2" / "docs"
    out = api.pipeline_run(folder_run_config(folder, runs, model), runs_dir=runs)
    assert out.status == "completed"
    return out.run_id, RunLayout(runs / out.run_id)


def _top(run_id: str, runs: Path, mode: str, k: int = 3) -> list[str]:
    service = api.search_service(run_id, runs_dir=runs)
    return [service.chunk(cid).content.text for cid, _s, _r in service.rank_reranked(QUESTION, mode, k)[0]]  # type: ignore[arg-type]


@pytest.mark.corpora
def test_no_mkdocs_chunk_is_content_free_and_the_drop_is_counted(corpora: Path, tmp_path: Path):
    run_id, layout = _run(corpora, tmp_path / "runs", "hash")
    texts = [json.loads(line)["content"]["text"] for line in layout.chunks.read_text(encoding="utf-8").splitlines()]
    assert texts and not [t for t in texts if content_free(t)]
    assert not any(t.lstrip().startswith("[Customizing Your Theme]: ") for t in texts)
    stats = json.loads(layout.chunk_stats.read_text(encoding="utf-8"))["stats"]
    assert stats["content_free_dropped"] >= 9  # the link-definition blocks ending nine sections
    assert all(not content_free(t) for t in _top(run_id, tmp_path / "runs", "keyword"))


@pytest.mark.corpora
@pytest.mark.model
@pytest.mark.slow
def test_how_to_add_a_custom_theme_finds_the_answer_not_the_link_block(corpora: Path, tmp_path: Path):
    run_id, _layout = _run(corpora, tmp_path / "runs", "local")
    for mode in ("semantic", "hybrid"):
        top = _top(run_id, tmp_path / "runs", mode)
        assert all(not content_free(t) for t in top), mode
    assert any(ANSWER in t for t in _top(run_id, tmp_path / "runs", "hybrid"))
