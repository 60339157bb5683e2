"""The one search service every surface uses (CLI, HTTP API, MCP)."""

from __future__ import annotations

import threading
from typing import Any

from indexfoundry.errors import ConfigInvalid, IndexFoundryError, NotFound
from indexfoundry.models.manifests import RunManifest
from indexfoundry.models.records import DocumentChunk
from indexfoundry.models.retrieval import (
    RetrievalProfile,
    SearchFilter,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from indexfoundry.phases.index import open_run_store
from indexfoundry.phases.index.embedders import Embedder, resolve_embedder
from indexfoundry.phases.index.stores import StoreHit, VectorStore
from indexfoundry.phases.serve import default_profile
from indexfoundry.pipeline.manifest import load_manifest
from indexfoundry.pipeline.runner import load_run_config
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout

_CHROMA_OPS = {"eq": "$eq", "neq": "$ne", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte", "in": "$in"}


class SearchService:
    """Search one run: loads the run's embedder, store and chunks once, then answers queries."""

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
        self.config = load_run_config(layout)
        self.vector_manifest: dict[str, Any] = read_json(layout.vector_manifest)
        self.model_id: str = self.vector_manifest["model_used"]
        self._embedder = embedder
        self._store: VectorStore | None = None
        self._chunks: dict[str, DocumentChunk] | None = None
        self._lock = threading.Lock()
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
    def chunks(self) -> dict[str, DocumentChunk]:
        with self._lock:
            if self._chunks is None:
                self._chunks = {
                    row["chunk_id"]: DocumentChunk.model_validate(row) for row in iter_jsonl(self.layout.chunks)
                }
            return self._chunks

    def chunk(self, chunk_id: str) -> DocumentChunk:
        found = self.chunks.get(chunk_id)
        if found is None:
            raise NotFound(f"chunk {chunk_id} is not in run {self.run_id}", suggestion="Check the chunk id")
        return found

    def _check_filters(self, filters: list[SearchFilter]) -> None:
        allowed = {f.field: set(f.operators) for f in self.profile.allowed_filters}
        for flt in filters:
            if flt.field not in allowed:
                raise ConfigInvalid(
                    f"filtering on '{flt.field}' is not allowed",
                    suggestion=f"Allowed fields: {', '.join(sorted(allowed)) or 'none'}",
                )
            if flt.op not in allowed[flt.field]:
                raise ConfigInvalid(
                    f"operator '{flt.op}' is not allowed on '{flt.field}'",
                    suggestion=f"Allowed: {', '.join(sorted(allowed[flt.field]))}",
                )
            if flt.op == "in" and not isinstance(flt.value, list):
                raise ConfigInvalid(f"filter '{flt.field} in' needs a list value", suggestion="Pass a JSON list")

    @staticmethod
    def _where(filters: list[SearchFilter]) -> dict[str, Any] | None:
        clauses = [{f.field: {_CHROMA_OPS[f.op]: f.value}} for f in filters if f.op in _CHROMA_OPS]
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    @staticmethod
    def _post_filter(chunk: DocumentChunk, filters: list[SearchFilter]) -> bool:
        data = chunk.model_dump(mode="json")
        for flt in filters:
            if flt.op != "contains":
                continue
            value: Any = data
            for part in flt.field.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value is None or str(flt.value) not in (value if isinstance(value, list) else str(value)):
                return False
        return True

    def _result(self, hit: StoreHit) -> SearchResult | None:
        chunk = self.chunks.get(hit.id)
        if chunk is None:
            return None
        return SearchResult(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            score=round(hit.score, 6),
            text=chunk.content.text,
            source=chunk.source,
            position=chunk.position,
            metadata=chunk.metadata,
            run_id=self.run_id,
        )

    def search(self, request: SearchRequest) -> SearchResponse:
        """Answer one search request, best result first."""
        if request.mode not in self.profile.retrieval_config.search_modes:
            raise ConfigInvalid(
                f"search mode '{request.mode}' is not offered by run {self.run_id}",
                suggestion=f"Use one of: {', '.join(self.profile.retrieval_config.search_modes)}",
            )
        self._check_filters(request.filters)
        wanted = request.top_k + request.offset
        has_post = any(f.op == "contains" for f in request.filters)
        fetch = wanted * 5 if has_post else wanted
        vector = self.embedder.embed([request.query])[0]
        hits = self.store.query(vector, fetch, self._where(request.filters))
        results: list[SearchResult] = []
        for hit in hits:
            result = self._result(hit)
            if result is None:
                continue
            if has_post and not self._post_filter(self.chunks[hit.id], request.filters):
                continue
            results.append(result)
        results.sort(key=lambda r: (-r.score, r.chunk_id))
        return SearchResponse(
            results=results[request.offset : wanted],
            run_id=self.run_id,
            mode=request.mode,
            indexed_at=self.indexed_at,
        )


def open_service(layout: RunLayout, embedder: Embedder | None = None) -> SearchService:
    """Open the search service of a run, mapping store failures to clear errors."""
    try:
        return SearchService(layout, embedder)
    except IndexFoundryError:
        raise
    except FileNotFoundError as exc:
        raise NotFound(f"run {layout.run_id} is missing {exc.filename}", suggestion="Rerun the pipeline") from None
