"""Searching a run before it completes: keyword over its committed chunks, semantic over the
vectors the embedding cache holds, and the same BM25 ranking as the finished run's index."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.backends.keyword.bm25 import KeywordIndex
from indexfoundry.errors import NotFound
from indexfoundry.retrieval.building import PartialIndex, chunks_committed
from indexfoundry.storage.layout import RunLayout, cache_dir
from tests.conftest import SAMPLE_DOCS, write_tree
from tests.fakes import RecordingEmbedder


def _run(tmp_path: Path) -> RunLayout:
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    config = {
        "connect": {"sources": [{"type": "folder", "path": str(docs)}]},
        "normalize": {"chunk_strategy": "by_heading"},
        "index": {"embedding_model": "hash"},
    }
    runs = tmp_path / "runs"
    out = api.pipeline_run(config, runs_dir=runs, embedder=RecordingEmbedder())
    return RunLayout(runs / out.run_id)


def test_a_partial_index_ranks_by_keyword_like_the_finished_index_and_by_meaning_over_cached_vectors(
    tmp_path: Path,
):
    layout = _run(tmp_path)
    partial = PartialIndex(layout, RecordingEmbedder())
    query = "pip install virtual environment"
    finished = [(h.chunk_id, h.score) for h in KeywordIndex.load(layout).search(query, 5)]
    assert partial.keyword(query, 5) == finished
    keyword = partial.search(query, "keyword", 3)
    assert keyword.mode == "keyword" and keyword.indexed_at is None
    assert keyword.results[0].source.uri == "docs/guide/install.md"
    assert "keyword search over all" in keyword.warnings[0]
    hybrid = partial.search(query, "hybrid", 3)
    total = len(partial.chunks)
    assert hybrid.mode == "hybrid" and f"with {total} of {total} chunks embedded so far" in hybrid.warnings[0]


def test_without_vectors_a_semantic_search_falls_back_to_keyword(tmp_path: Path):
    layout = _run(tmp_path)
    for name in ("embeddings.sqlite", "embeddings.sqlite-wal", "embeddings.sqlite-shm"):
        (cache_dir(layout.runs_dir) / name).unlink(missing_ok=True)
    answer = PartialIndex(layout, RecordingEmbedder()).search("theme colours", "semantic", 3)
    assert answer.mode == "keyword" and answer.results


def test_a_run_without_committed_chunks_has_no_partial_index(tmp_path: Path):
    layout = RunLayout(tmp_path / "runs" / "01900000-0000-7000-8000-000000000000")
    assert not chunks_committed(layout)
    with pytest.raises(NotFound):
        PartialIndex(layout)


def test_a_half_embedded_run_answers_hybrid_by_keyword_and_semantic_over_what_is_embedded(tmp_path: Path):
    """A fusion of a semantic leg over some chunks with a keyword leg over all would rank the
    embedded chunks first whatever their relevance: hybrid waits for every vector."""
    import sqlite3

    layout = _run(tmp_path)
    partial = PartialIndex(layout, RecordingEmbedder())
    missing = sorted(partial._hashes.values())[:2]
    with sqlite3.connect(cache_dir(layout.runs_dir) / "embeddings.sqlite") as db:
        db.executemany("DELETE FROM embeddings WHERE text_hash = ?", [(h,) for h in missing])
    query = "pip install virtual environment"
    total = len(partial.chunks)
    hybrid = partial.search(query, "hybrid", 3)
    assert hybrid.mode == "keyword"
    assert [r.chunk_id for r in hybrid.results] == [cid for cid, _ in partial.keyword(query, 3)]
    assert f"until all are embedded ({total - 2} so far)" in hybrid.warnings[0]
    semantic = partial.search(query, "semantic", 3)
    assert semantic.mode == "semantic" and f"with {total - 2} of {total} chunks embedded so far" in semantic.warnings[0]
