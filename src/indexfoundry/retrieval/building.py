"""Searching a run that is still being built: what its finished phases already hold.

Once the normalize phase has committed a run's chunks, ``PartialIndex`` answers keyword
searches over them (BM25 in memory, the same tokenizer and parameters as the index phase's
keyword index); once vectors land in the runs folder's embedding cache (the index phase
commits each batch there), semantic searches rank the chunks embedded so far, by cosine to the
query embedded with the run's model (a long chunk by its first window: its other windows'
vectors count once the run is built), and hybrid searches once every chunk has its vector
(before, they answer by keyword: a fusion over part of the vectors favours the embedded
chunks). Nothing is written: the run's own artifacts, and which run is ``latest``, are the
pipeline's alone. Answers say what they were
searched over (``warnings``), and a result names the building run.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Embedder, embed_queries, l2_normalize
from indexfoundry.backends.embedding.cache import EmbeddingCache
from indexfoundry.backends.embedding.providers import resolve_embedder
from indexfoundry.backends.keyword.bm25 import KeywordIndex
from indexfoundry.errors import NotFound
from indexfoundry.models.records import DocumentChunk
from indexfoundry.models.retrieval import SCORE_MEANING, SearchMode, SearchResponse, SearchResult
from indexfoundry.phases.executor import LOCAL
from indexfoundry.phases.index.embedding import cache_model_key
from indexfoundry.phases.serve import default_profile
from indexfoundry.retrieval.fusion import Ranked, fuse
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import RunLayout, cache_dir
from indexfoundry.storage.manifest import load_manifest, load_run_config

CANDIDATES = 100  # per leg of a hybrid search, as a finished run's search


def chunks_committed(layout: RunLayout) -> bool:
    """True once the run's normalize phase has completed (its chunks are final)."""
    try:
        normalize = load_manifest(layout).phases.get("normalize")
    except (OSError, ValueError, NotFound):
        return False
    return normalize is not None and normalize.status == "completed" and layout.chunks.is_file()


class PartialIndex:
    """Keyword search over a building run's committed chunks, semantic over its vectors so far."""

    def __init__(self, layout: RunLayout, embedder: Embedder | None = None) -> None:
        if not chunks_committed(layout):
            raise NotFound(f"run {layout.run_id} has no chunks yet", suggestion="Wait for its normalize phase")
        self.layout = layout
        self.config = load_run_config(layout)
        chunks = [DocumentChunk.model_validate(row) for row in iter_jsonl(layout.chunks)]
        self.chunks: dict[str, DocumentChunk] = {c.chunk_id: c for c in sorted(chunks, key=lambda c: c.chunk_id)}
        self._hashes = {cid: sha256_text(c.embedding_text()) for cid, c in self.chunks.items()}
        self.keyword_index = KeywordIndex.in_memory(list(self.chunks.values()))
        self._embedder = embedder
        self._lock = threading.Lock()
        self.profile = default_profile()

    @property
    def run_id(self) -> str:
        return self.layout.run_id

    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = resolve_embedder(self.config.index.embedding_model, self.config.index)
            return self._embedder

    def vectors(self) -> tuple[list[str], Any]:
        """The chunk ids whose vectors the embedding cache holds now, and those vectors (rows)."""
        embedder = self.embedder()
        # Docs mode builds with the local executor: vectors keyed as it keys them.
        key = cache_model_key(embedder.model_id, LOCAL.embedding_device(embedder))
        cache = EmbeddingCache(cache_dir(self.layout.runs_dir) / "embeddings.sqlite")
        try:
            found = cache.get_many(key, self._hashes.values())
        finally:
            cache.close()
        ids = [cid for cid, h in self._hashes.items() if h in found]
        if not ids:
            return [], None
        return ids, l2_normalize(np.stack([found[self._hashes[cid]] for cid in ids]))

    def keyword(self, query: str, k: int) -> Ranked:
        return [(hit.chunk_id, hit.score) for hit in self.keyword_index.search(query, k)]

    def semantic(self, query: str, k: int) -> tuple[Ranked, int]:
        """The best ``k`` chunks embedded so far by cosine, and how many were embedded."""
        ids, matrix = self.vectors()
        if not ids:
            return [], 0
        vector = l2_normalize(np.asarray(embed_queries(self.embedder(), [query]), dtype=np.float32))[0]
        scores = matrix @ vector
        ranked = sorted(zip(ids, (float(s) for s in scores), strict=True), key=lambda item: (-item[1], item[0]))
        return ranked[:k], len(ids)

    def search(self, query: str, mode: SearchMode, top_k: int) -> SearchResponse:
        """The best ``top_k`` chunks in ``mode`` from what the run holds now (the answer's
        ``mode`` says which ran): semantic falls back to keyword while no vector has landed, and
        hybrid while any chunk has none yet. A fusion of a semantic leg over some chunks with a
        keyword leg over all would rank the embedded ones above the rest whatever their relevance
        (they get two reciprocal ranks, the others one)."""
        total = len(self.chunks)
        embedded = 0
        semantic: Ranked = []
        if mode != "keyword":
            semantic, embedded = self.semantic(query, max(top_k, CANDIDATES))
        complete = embedded == total
        used: SearchMode = "keyword" if not embedded or (mode == "hybrid" and not complete) else mode
        if used == "semantic":
            ranked = semantic[:top_k]
        elif used == "keyword":
            ranked = self.keyword(query, top_k)
        else:
            lexical = self.keyword(query, max(top_k, CANDIDATES))
            ranked = fuse(semantic, lexical, self.profile.retrieval_config.hybrid_config)[:top_k]
        where = f"keyword search over all {total} chunks"
        if used != "keyword":
            where = f"{used} search with {embedded} of {total} chunks embedded so far"
        elif mode == "hybrid" and embedded:
            where = f"keyword search over all {total} chunks until all are embedded ({embedded} so far)"
        return SearchResponse(
            results=[self._result(cid, score) for cid, score in ranked],
            run_id=self.run_id,
            mode=used,
            score_meaning=SCORE_MEANING[used],
            indexed_at=None,
            warnings=[f"the index is still building: {where}; results may change when it completes"],
        )

    def _result(self, chunk_id: str, score: float) -> SearchResult:
        chunk = self.chunks[chunk_id]
        return SearchResult(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            score=round(score, 6),
            text=chunk.content.text,
            fence=chunk.position.fence,
            source=chunk.source,
            breadcrumb=chunk.metadata.heading_path or chunk.position.section,
            position=chunk.position,
            metadata=chunk.metadata,
            run_id=self.run_id,
        )
