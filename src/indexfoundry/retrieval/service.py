"""The one search service every surface uses (CLI, HTTP API, MCP, ``indexfoundry eval``).

Three modes over one run:

- ``semantic``: the query's vector against the run's vector store (cosine similarity);
- ``keyword``: BM25 over the run's keyword index (``indexed/bm25``); or, as an option of the
  pgvector store (``connection.full_text_search``), PostgreSQL full-text search in the store;
- ``hybrid``: both candidate lists fused, by reciprocal rank fusion (``rrf``: the sum of
  ``1 / (rrf_k + rank)``) or by ``weighted_sum`` (``alpha`` × min-max normalised semantic
  score + (1 − ``alpha``) × min-max normalised BM25 score), as the retrieval profile says.

Filters are checked against the profile, pushed into the vector store where it can apply
them, and evaluated by one rule (``retrieval.filters.matches``) for every mode.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Embedder, Vectors, embed_queries
from indexfoundry.backends.embedding.providers import resolve_embedder
from indexfoundry.backends.embedding.windows import chunk_of
from indexfoundry.backends.keyword.bm25 import KeywordIndex
from indexfoundry.backends.rerank import Reranker, resolve_reranker
from indexfoundry.backends.stores import VectorStore, keyword_in_store, pushes_contains
from indexfoundry.errors import ConfigInvalid, IndexFoundryError, NotFound
from indexfoundry.models.artifacts import VectorManifest
from indexfoundry.models.manifests import RunManifest
from indexfoundry.models.records import DocumentChunk
from indexfoundry.models.retrieval import (
    SCORE_MEANING,
    ExpandMode,
    RerankerConfig,
    RetrievalProfile,
    SearchFilter,
    SearchMode,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from indexfoundry.phases.index import open_run_store
from indexfoundry.phases.serve import default_profile
from indexfoundry.retrieval.budget import TokenCounter, counter_for, page_search
from indexfoundry.retrieval.expand import Expander
from indexfoundry.retrieval.filters import check_filters, matches, needs_post_filter, store_where
from indexfoundry.retrieval.fusion import Ranked, fuse
from indexfoundry.retrieval.legs import QueryLegs
from indexfoundry.storage.artifacts import read_artifact
from indexfoundry.storage.atomic import read_json
from indexfoundry.storage.hashing import canonical_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import fetch_times, load_manifest, load_run_config
from indexfoundry.storage.memo import Memo

# Candidates each mode contributes to hybrid fusion (at least; more when more results are wanted).
HYBRID_CANDIDATES = 100
# Fields whose store value is a flattened list (joined text): never pushed into the store.
_LIST_FIELDS = frozenset({"metadata.tags"})
_MASK_CACHE_SIZE = 32
# Reranked candidate lists kept per (query, mode, filters): paging with a cursor reranks once.
_RERANK_CACHE_SIZE = 32

# (chunk id, retrieval score, rerank score or None), best first.
Reranked = list[tuple[str, float, float | None]]
log = logging.getLogger(__name__)


# Chunk records by their chunks.jsonl line (storage/memo.py: on in docs mode only). A run rebuilt
# after one edit shares nearly every line with the run it replaces, so opening it for the first
# query validates only the changed file's chunks.
_chunk_memo: Memo[DocumentChunk] = Memo(20_000)


class SearchService:
    """Search one run: loads the run's embedder, store, keyword index and chunks once, then answers queries."""

    def __init__(self, layout: RunLayout, embedder: Embedder | None = None) -> None:
        self.layout = layout
        self.manifest: RunManifest = load_manifest(layout)
        index = self.manifest.phases.get("index")
        if index is None or index.status != "completed":
            raise NotFound(
                f"run {layout.run_id} has no completed index phase",
                suggestion=f"Run 'indexfoundry index --run-id {layout.run_id}' or a full pipeline run",
            )
        self.indexed_at = index.completed_at
        connect = self.manifest.phases.get("connect")
        # When the run read each source (the connect phase's manifest entry).
        self.fetched_at = fetch_times(connect)
        self.config = load_run_config(layout)
        self.vector_manifest: VectorManifest = read_artifact(layout.vector_manifest, VectorManifest)
        self.model_id: str = self.vector_manifest.model_used
        self.store_fields: set[str] = set(self.vector_manifest.metadata_schema) - _LIST_FIELDS
        self._embedder = embedder
        self._store: VectorStore | None = None
        self._keyword: KeywordIndex | None = None
        self._chunks: dict[str, DocumentChunk] | None = None
        self._data: dict[str, dict[str, Any]] | None = None
        self._masks: OrderedDict[str, np.ndarray[Any, Any]] = OrderedDict()
        self._reranker_override: RerankerConfig | None = None
        self._reranker: Reranker | None = None
        self._reranked: OrderedDict[str, Reranked] = OrderedDict()
        self._expander: Expander | None = None
        self._lock = threading.RLock()
        self._legs = QueryLegs()
        self._keyword_checked: bool | None = None
        self.profile = (
            RetrievalProfile.model_validate(read_json(layout.retrieval_profile))
            if layout.retrieval_profile.is_file()
            else default_profile()
        )

    @property
    def run_id(self) -> str:
        return self.layout.run_id

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = resolve_embedder(self.model_id, self.config.index)
            if self._embedder.model_id != self.model_id:
                raise ConfigInvalid(
                    f"run {self.run_id} was indexed with {self.model_id}, not {self._embedder.model_id}",
                    suggestion="Search with the model the run was indexed with",
                )
            return self._embedder

    @property
    def store(self) -> VectorStore:
        with self._lock:
            if self._store is None:
                self._store = open_run_store(self.layout, self.config)
            return self._store

    @property
    def keyword_index(self) -> KeywordIndex:
        with self._lock:
            if self._keyword is None:
                self._keyword = KeywordIndex.load(self.layout)
            return self._keyword

    @property
    def chunks(self) -> dict[str, DocumentChunk]:
        with self._lock:
            if self._chunks is None:
                lines = [line for line in self.layout.chunks.read_text(encoding="utf-8").splitlines() if line.strip()]
                known = _chunk_memo.get_many(lines)
                rows = [json.loads(line) for line in lines]
                fresh: dict[str, DocumentChunk] = {}
                chunks: dict[str, DocumentChunk] = {}
                for line, row in zip(lines, rows, strict=True):
                    chunk = known.get(line)
                    if chunk is None:
                        chunk = fresh[line] = DocumentChunk.model_validate(row)
                    chunks[row["chunk_id"]] = chunk
                _chunk_memo.put_many(fresh)
                self._chunks = chunks
                self._data = {row["chunk_id"]: row for row in rows}
            return self._chunks

    def _rows(self) -> dict[str, dict[str, Any]]:
        self.chunks  # noqa: B018 - loads the rows
        assert self._data is not None
        return self._data

    def chunk(self, chunk_id: str) -> DocumentChunk:
        found = self.chunks.get(chunk_id)
        if found is None:
            raise NotFound(f"chunk {chunk_id} is not in run {self.run_id}", suggestion="Check the chunk id")
        return found

    # ------------------------------------------------------------------ the three modes
    def _keep(self, chunk_id: str, filters: list[SearchFilter]) -> bool:
        data = self._rows().get(chunk_id)
        return data is not None and (not filters or matches(data, filters))

    def _kept(self, hits: Iterable[tuple[str, float]], filters: list[SearchFilter]) -> Ranked:
        """The hits whose chunk is in the run and passes ``filters``, in their order."""
        rows = self._rows()
        return [(c, s) for c, s in hits if (self._keep(c, filters) if filters else c in rows)]

    def query_vector(self, query: str) -> Vectors:
        """The query's vector (1 x dimensions), by the run's model."""
        return embed_queries(self.embedder, [query])

    def semantic(self, query: str, k: int, filters: list[SearchFilter]) -> Ranked:
        """Up to ``k`` chunks by cosine similarity, filters applied (in the store where it can)."""
        if not self.chunks or k <= 0:
            return []
        return self._legs.semantic(lambda: self.nearest(self.query_vector(query), k, filters))

    def nearest(self, query_vector: Vectors, k: int, filters: list[SearchFilter]) -> Ranked:
        """Up to ``k`` chunks nearest to ``query_vector``, filters applied (in the store where it can)."""
        total = len(self.chunks)
        if total == 0 or k <= 0:
            return []
        # Chunk fields that are lists are stored joined by commas: a substring match there is a
        # superset of membership, and every hit is checked with ``matches`` below.
        contains = pushes_contains(self.config.index.vector_db)
        where = store_where(filters, self.store_fields, contains)
        # Only what the request needs (top_k + offset); four times that when filters must be
        # checked after the store answered, growing until enough hits pass.
        # A long chunk's windows are vectors of their own (``<chunk id>#w1`` ...): each chunk is
        # kept once, at its best window's score, so twice as many are fetched when there are any.
        vectors = max(total, self.vector_manifest.vectors)
        windows = vectors > total
        fetch = k * 4 if needs_post_filter(filters, self.store_fields, contains) else k
        fetch = min(vectors, fetch * 2 if windows else fetch)
        vector = query_vector[0]
        # Without a filter for the store, a store that can rank without reading metadata does
        # (Chroma: most of a 50-hit query's time is its metadata).
        scores_only = getattr(self.store, "query_scores", None) if where is None else None
        while True:
            if scores_only is not None:
                hits: list[tuple[str, float]] = scores_only(vector, fetch)
            else:
                hits = [(h.id, h.score) for h in self.store.query(vector, fetch, where)]
            best: dict[str, float] = {}
            for hit_id, score in hits:
                cid = chunk_of(hit_id) if windows else hit_id
                if cid not in best or score > best[cid]:
                    best[cid] = score
            kept = self._kept(best.items(), filters)
            if len(kept) >= k or len(hits) < fetch or fetch >= vectors:
                break
            fetch = min(vectors, fetch * 4)
        kept.sort(key=lambda item: (-item[1], item[0]))
        return kept[:k]

    def _mask(self, index: KeywordIndex, filters: list[SearchFilter]) -> np.ndarray[Any, Any]:
        key = canonical_json([f.model_dump(mode="json") for f in filters])
        with self._lock:
            cached = self._masks.get(key)
            if cached is not None:
                self._masks.move_to_end(key)
                return cached
        mask = np.fromiter((self._keep(cid, filters) for cid in index.chunk_ids), dtype=np.float32)
        with self._lock:
            self._masks[key] = mask
            while len(self._masks) > _MASK_CACHE_SIZE:
                self._masks.popitem(last=False)
        return mask

    def keyword(self, query: str, k: int, filters: list[SearchFilter]) -> Ranked:
        """Up to ``k`` chunks by BM25 score (only chunks containing a query term), filters applied."""
        if keyword_in_store(self.config.index.vector_db):
            return self._store_keyword(query, k, filters)
        index = self.keyword_index
        mask = self._mask(index, filters) if filters else None
        hits = index.search(query, k, mask)
        return list(hits) if not filters and self._keyword_in_run(index) else self._kept(hits, filters)

    def _keyword_in_run(self, index: KeywordIndex) -> bool:
        """Whether every chunk of the keyword index is in the run (checked once, not per hit)."""
        with self._lock:
            if self._keyword_checked is None:
                rows = self._rows()
                self._keyword_checked = all(cid in rows for cid in index.chunk_ids)
            return self._keyword_checked

    def _store_keyword(self, query: str, k: int, filters: list[SearchFilter]) -> Ranked:
        """The keyword leg in the store's own full-text search (pgvector's option), filters pushed
        where the store can and every hit checked with ``matches``, fetching more until ``k`` pass."""
        total = len(self.chunks)
        if total == 0 or k <= 0:
            return []
        contains = pushes_contains(self.config.index.vector_db)
        where = store_where(filters, self.store_fields, contains)
        fetch = min(total, k * 4 if needs_post_filter(filters, self.store_fields, contains) else k)
        search = getattr(self.store, "keyword_search")  # noqa: B009 - only stores with full-text search get here
        while True:
            hits = search(query, fetch, where)
            kept = [(h.id, h.score) for h in hits if self._keep(h.id, filters)]
            if len(kept) >= k or len(hits) < fetch or fetch >= total:
                return kept[:k]
            fetch = min(total, fetch * 4)

    def hybrid(self, query: str, k: int, filters: list[SearchFilter]) -> Ranked:
        """Semantic and keyword candidates fused as the profile's ``hybrid_config`` says."""
        pool = max(k, HYBRID_CANDIDATES)
        if not self.chunks or k <= 0:
            return []
        # The keyword leg beside the semantic leg when that pays (retrieval/legs.py).
        semantic, lexical = self._legs.both(
            lambda: self.nearest(self.query_vector(query), pool, filters), lambda: self.keyword(query, pool, filters)
        )
        return fuse(semantic, lexical, self.profile.retrieval_config.hybrid_config, k)

    def rank(self, query: str, mode: SearchMode, k: int, filters: list[SearchFilter] | None = None) -> Ranked:
        """The best ``k`` (chunk id, score) pairs for ``query`` in ``mode``, best first.

        Filters are not checked against the profile here (``search`` does); evaluation calls this.
        """
        filters = filters or []
        if mode == "semantic":
            return self.semantic(query, k, filters)
        if mode == "keyword":
            return self.keyword(query, k, filters)
        return self.hybrid(query, k, filters)

    # ------------------------------------------------------------------ reranking
    @property
    def reranker_config(self) -> RerankerConfig:
        """The reranker block in force: the run's profile, or what ``use_reranker`` set."""
        return self._reranker_override or self.profile.retrieval_config.reranker

    def use_reranker(self, config: RerankerConfig | None) -> None:
        """Rerank with ``config`` instead of the profile's block (``indexfoundry eval --reranker``)."""
        with self._lock:
            self._reranker_override = config
            self._reranker = None
            self._reranked.clear()

    @property
    def reranker(self) -> Reranker:
        with self._lock:
            if self._reranker is None:
                self._reranker = resolve_reranker(self.reranker_config)
            return self._reranker

    def rerank_scores(self, query: str, chunk_ids: list[str]) -> list[float]:
        """The reranker's score of each chunk for ``query`` (``RERANK_ERROR`` when it fails)."""
        return self.reranker.score(query, [self.chunks[cid].content.text for cid in chunk_ids])

    def _apply_rerank(self, query: str, ranked: Ranked) -> Reranked:
        """The first ``top_k_to_rerank`` candidates in the reranker's order, then the rest as retrieved."""
        cfg = self.reranker_config
        head, tail = ranked[: cfg.top_k_to_rerank], ranked[cfg.top_k_to_rerank :]
        scores = self.rerank_scores(query, [cid for cid, _ in head])
        # Ties keep the retrieval order, so the ranking stays deterministic.
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        return [(head[i][0], head[i][1], round(scores[i], 6)) for i in order] + [(c, s, None) for c, s in tail]

    def rank_reranked(
        self, query: str, mode: SearchMode, k: int, filters: list[SearchFilter] | None = None
    ) -> tuple[Reranked, list[str]]:
        """Like ``rank``, then reranked when the reranker is enabled.

        A reranker failure never empties the answer: the retrieval order is returned with a
        warning saying why.
        """
        cfg = self.reranker_config
        if not cfg.enabled:
            return [(cid, score, None) for cid, score in self.rank(query, mode, k, filters)], []
        pool = max(k, cfg.top_k_to_rerank)
        key = canonical_json([query, mode, pool, [f.model_dump(mode="json") for f in filters or []]])
        with self._lock:
            cached = self._reranked.get(key)
        if cached is not None:
            return cached[:k], []
        ranked = self.rank(query, mode, pool, filters)
        try:
            reranked = self._apply_rerank(query, ranked)
        except IndexFoundryError as exc:
            warning = f"reranking skipped, results are in retrieval order: {exc.one_line()}"
            log.warning("%s", warning)
            return [(cid, score, None) for cid, score in ranked[:k]], [warning]
        with self._lock:
            self._reranked[key] = reranked
            while len(self._reranked) > _RERANK_CACHE_SIZE:
                self._reranked.popitem(last=False)
        return reranked[:k], []

    # ------------------------------------------------------------------ the request API
    def _result(self, chunk_id: str, score: float, rerank_score: float | None = None) -> SearchResult:
        chunk = self.chunks[chunk_id]
        return SearchResult(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            score=round(score, 6),
            rerank_score=rerank_score,
            fetched_at=self.fetched_at.get(chunk.source.uri),
            text=chunk.content.text,
            fence=chunk.position.fence,
            source=chunk.source,
            breadcrumb=chunk.metadata.heading_path or chunk.position.section,
            position=chunk.position,
            metadata=chunk.metadata,
            run_id=self.run_id,
        )

    def check(self, request: SearchRequest) -> None:
        """Refuse a mode or filter the run's retrieval profile does not offer (``CONFIG_INVALID``)."""
        if request.mode not in self.profile.retrieval_config.search_modes:
            raise ConfigInvalid(
                f"search mode '{request.mode}' is not offered by run {self.run_id}",
                suggestion=f"Use one of: {', '.join(self.profile.retrieval_config.search_modes)}",
            )
        check_filters(request.filters, self.profile)

    def search(self, request: SearchRequest, cost: Callable[[SearchResult], int] | None = None) -> SearchResponse:
        """Answer one search request, best result first; ``offset`` pages through the ranking.

        With the profile's reranker enabled, the first ``top_k_to_rerank`` candidates (after
        fusion, in every mode) are reordered by the reranker before the page is cut. With
        ``max_tokens`` (or a ``cursor``) the answer comes in pages within the budget (``cost``
        measures a result; default: the tokens of its JSON).
        """
        self.check(request)
        wanted = request.top_k + request.offset
        ranked, warnings = self.rank_reranked(request.query, request.mode, wanted, request.filters)
        reranked = any(r is not None for _, _, r in ranked)
        answer = ranked[request.offset : wanted]
        response = SearchResponse(
            results=[],
            run_id=self.run_id,
            mode=request.mode,
            indexed_at=self.indexed_at,
            score_meaning=self.score_meaning(request.mode),
            reranker=self.reranker.model_id if reranked else None,
            warnings=warnings,
        )
        if request.max_tokens is None and request.cursor is None:
            response.results = self._results(answer, request.expand)
            return response
        return self._budgeted(request, answer, response, cost)

    @property
    def expander(self) -> Expander:
        with self._lock:
            if self._expander is None:
                self._expander = Expander(self.layout, self.chunks)
            return self._expander

    def _results(self, answer: Reranked, expand: ExpandMode) -> list[SearchResult]:
        """The results of ``answer``; with ``expand``, their texts widened (adjacent hits merged)."""
        results = [self._result(cid, score, rr) for cid, score, rr in answer]
        if expand == "none" or not results:
            return results
        expanded = zip(results, self.expander.expand([r.chunk_id for r in results], expand), strict=True)
        return [r.model_copy(update={"text": t, "expanded": info, "fence": fence}) for r, (t, info, fence) in expanded]

    @property
    def token_counter(self) -> TokenCounter:
        """How this run counts tokens: its embedding model's tokenizer, else chars/4."""
        return counter_for(self.model_id)

    def result_tokens(self, result: SearchResult) -> int:
        """Tokens of a result as the HTTP API and the CLI return it (its JSON)."""
        return self.token_counter.count(json.dumps(result.model_dump(mode="json", exclude_none=True)))

    def _budgeted(
        self,
        request: SearchRequest,
        answer: Reranked,
        response: SearchResponse,
        cost: Callable[[SearchResult], int] | None,
    ) -> SearchResponse:
        """One page of ``answer`` within ``max_tokens``: whole results as fit, then ``next_cursor``.

        A result that alone exceeds the budget comes in parts (``text_range``), one per page.
        """
        # Expanded over the whole answer: merging adjacent hits must not depend on the page.
        results = self._results(answer, request.expand)
        page, used, next_cursor = page_search(request, results, self.run_id, cost or self.result_tokens)
        response.results = page
        response.tokens = used
        response.token_counter = self.token_counter.name
        if next_cursor is not None:
            response.next_cursor = next_cursor
        return response

    def score_meaning(self, mode: SearchMode) -> str:
        """What a score means in ``mode`` for this run's fusion settings."""
        hybrid = self.profile.retrieval_config.hybrid_config
        if mode == "hybrid" and hybrid.fusion_method == "weighted_sum":
            return (
                f"weighted sum: {hybrid.alpha} x min-max normalised cosine + {1 - hybrid.alpha:.2f} x normalised "
                "BM25 (0..1)"
            )
        return SCORE_MEANING[mode]


def close_service(service: SearchService) -> None:
    """Release the service's vector store connection (server stores hold one)."""
    with service._lock:
        service._legs.close()
        if service._store is not None:
            service._store.close()
            service._store = None


def open_service(layout: RunLayout, embedder: Embedder | None = None) -> SearchService:
    """Open the search service of a run, mapping missing files to clear errors."""
    try:
        return SearchService(layout, embedder)
    except IndexFoundryError:
        raise
    except FileNotFoundError as exc:
        raise NotFound(f"run {layout.run_id} is missing {exc.filename}", suggestion="Rerun the pipeline") from None
