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


def test_every_line_of_the_embeddings_file_is_an_embedding_record_in_canonical_form(tmp_path):
    from indexfoundry.models.config import IndexConfig
    from indexfoundry.models.records import EmbeddingRecord
    from indexfoundry.phases.index.embedding import decode_vector, embed_chunks
    from indexfoundry.phases.index.rows import ROW_HASH_KEY
    from indexfoundry.storage.atomic import jsonl_line
    from indexfoundry.storage.layout import RunLayout
    from tests.unit.backends.keyword.test_bm25 import make_chunk

    layout = RunLayout(tmp_path / "runs" / "01890a5d-ac96-774b-bcce-b302099a8057")
    chunks = [make_chunk(f"c{n}", f"Chunk number {n} about widgets.") for n in range(5)]
    config = IndexConfig(embedding_model="hash")
    embedded = embed_chunks(layout, chunks, HashEmbedder(16), config)
    lines = layout.embeddings.read_text(encoding="utf-8").splitlines()
    stored = embedded.store_rows(config.vector_db)
    assert len(lines) == 5
    for line in lines:
        record = EmbeddingRecord.model_validate_json(line)
        assert jsonl_line(record) == line
        assert record.row_hash == stored[record.chunk_id][ROW_HASH_KEY]
        assert decode_vector(record.vector).tolist() == embedded.vectors[record.text_hash].tolist()
