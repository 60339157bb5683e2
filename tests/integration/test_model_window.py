"""The model window: measured by default (long chunks are embedded in windows by the index phase,
or warned about with index.long_chunks: truncate); with normalize.max_tokens every mkdocs chunk
fits all-MiniLM-L6-v2's 256 tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry.models.config import IndexConfig, NormalizeConfig, parse_pipeline_config
from indexfoundry.models.records import DocumentChunk
from indexfoundry.phases.normalize.window import token_window
from indexfoundry.pipeline.runner import create_run, execute, new_run_id
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout

pytestmark = pytest.mark.corpora


def normalize(folder: Path, runs_dir: Path, index: dict[str, object] | None = None, **normalize: object) -> RunLayout:
    config = parse_pipeline_config(
        {
            "connect": {"sources": [{"type": "folder", "path": str(folder), "glob": "**/*.md"}]},
            "normalize": {"detect_language": False, **normalize},
            "index": index or {},
        }
    )
    layout = RunLayout.for_run(runs_dir, new_run_id())
    create_run(layout, config)
    out = execute(layout, config, phases=["connect", "extract", "normalize"])
    assert out.phases["normalize"].status == "completed"
    return layout


@pytest.mark.parametrize("strategy", ["recursive", "by_heading"])
def test_with_max_tokens_no_mkdocs_chunk_is_longer_than_the_model_window(
    corpora: Path, runs_dir: Path, strategy: str, capsys: pytest.CaptureFixture[str]
):
    layout = normalize(corpora / "markdown/mkdocs-1.4.2/docs", runs_dir, chunk_strategy=strategy, max_tokens=256)
    stats = read_json(layout.chunk_stats)["stats"]
    assert stats["token_window"]["max_tokens"] == 256
    assert stats["chunks_over_window"] == 0
    assert stats["chunks_split_for_window"] > 0
    chunks = [DocumentChunk.model_validate(row) for row in iter_jsonl(layout.chunks)]
    window = token_window(NormalizeConfig(), IndexConfig())
    assert window is not None
    assert max(window.count([c.embedding_text() for c in chunks])) <= 256
    assert "window" not in capsys.readouterr().err


def test_the_default_config_counts_chunks_longer_than_the_model_window_and_says_they_are_embedded_in_windows(
    corpora: Path, runs_dir: Path, capsys: pytest.CaptureFixture[str]
):
    # Splitting by default cost SciFact hybrid nDCG@10 (0.7138 -> 0.7073): it is opt-in; the index
    # phase embeds long chunks in windows instead (index.long_chunks: windows).
    layout = normalize(corpora / "markdown/mkdocs-1.4.2/docs", runs_dir, chunk_strategy="recursive")
    stats = read_json(layout.chunk_stats)["stats"]
    assert stats["token_window"]["max_tokens"] == 256
    assert stats["chunks_over_window"] > 0
    assert stats["chunks_embedded_in_windows"] == stats["chunks_over_window"]
    assert stats["chunks_split_for_window"] == 0
    err = capsys.readouterr().err
    assert "256-token window" in err and "index.long_chunks: windows" in err and "warning" not in err


def test_with_long_chunks_truncate_a_run_warns_that_their_tails_are_not_embedded(
    corpora: Path, runs_dir: Path, capsys: pytest.CaptureFixture[str]
):
    layout = normalize(corpora / "markdown/mkdocs-1.4.2/docs/about", runs_dir, index={"long_chunks": "truncate"})
    stats = read_json(layout.chunk_stats)["stats"]
    assert stats["chunks_over_window"] > 0 and "chunks_embedded_in_windows" not in stats
    assert "warning" in capsys.readouterr().err


def test_a_run_warns_when_chunks_are_longer_than_the_window(
    corpora: Path, runs_dir: Path, capsys: pytest.CaptureFixture[str]
):
    # 16 tokens: a breadcrumb alone can take more, so some chunks cannot fit.
    layout = normalize(
        corpora / "markdown/mkdocs-1.4.2/docs/about", runs_dir, chunk_strategy="by_heading", max_tokens=16
    )
    stats = read_json(layout.chunk_stats)["stats"]
    assert stats["token_window"]["max_tokens"] == 16
    assert stats["chunks_over_window"] > 0
    assert "16-token window" in capsys.readouterr().err
