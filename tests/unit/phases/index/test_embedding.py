"""The embedding cache keeps vectors of another device apart."""

from __future__ import annotations

from indexfoundry.backends.embedding.hashing import HashEmbedder
from indexfoundry.phases.executor import LocalExecutor
from indexfoundry.phases.index.embedding import cache_model_key


def test_gpu_vectors_are_cached_apart_from_cpu_vectors():
    assert cache_model_key("local:m", "cpu") == "local:m"
    assert cache_model_key("local:m", "cuda") == "local:m|cuda"
    assert LocalExecutor().embedding_device(HashEmbedder(8)) == "cpu"


def test_window_splits_are_kept_for_the_next_run_and_equal_a_fresh_split(tmp_path, monkeypatch):
    from indexfoundry.models.config import IndexConfig
    from indexfoundry.models.records import ChunkContent, ChunkMetadata, ChunkPosition, ChunkSource, DocumentChunk
    from indexfoundry.phases.index import embedding
    from indexfoundry.storage.workcache import WorkCache

    def chunk(n: int, text: str) -> DocumentChunk:
        return DocumentChunk(
            doc_id="d" * 64,
            chunk_id=f"{n:064d}",
            chunk_index=n,
            source=ChunkSource(type="markdown", uri="docs/a.md", content_hash="e" * 64),
            content=ChunkContent(text=text, text_hash="f" * 64, char_count=len(text), token_count_approx=1),
            position=ChunkPosition(byte_start=0, byte_end=len(text), line_start=1, line_end=1),
            metadata=ChunkMetadata(content_type="text/markdown"),
        )

    long_text = " ".join(f"word{i}" for i in range(700))
    chunks = [chunk(1, long_text), chunk(2, "short text")]
    texts = {c.chunk_id: c.embedding_text() for c in chunks}
    config = IndexConfig(embedding_model="local", long_chunks="windows")
    fresh = embedding.chunk_windows(chunks, texts, "local", config)
    assert list(fresh) == [chunks[0].chunk_id] and len(fresh[chunks[0].chunk_id]) >= 2
    with WorkCache.for_runs(tmp_path) as work:
        assert embedding.chunk_windows(chunks, texts, "local", config, work) == fresh
    calls: list[str] = []
    real = embedding.local_window_texts

    def counting(window: int):
        split = real(window)
        return lambda embedded, body: calls.append(body) or split(embedded, body)

    monkeypatch.setattr(embedding, "local_window_texts", counting)
    with WorkCache.for_runs(tmp_path) as work:
        assert embedding.chunk_windows(chunks, texts, "local", config, work) == fresh
    assert calls == []  # both chunks' splits came from the cache
