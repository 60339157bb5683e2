"""Retrieval models shared by the CLI, the HTTP API and the MCP server (one source of truth)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.records import ChunkMetadata, ChunkPosition, ChunkSource

SearchMode = Literal["semantic", "keyword", "hybrid"]
FilterOp = Literal["eq", "neq", "gt", "gte", "lt", "lte", "in", "contains"]


class HybridConfig(Strict):
    alpha: float = Field(default=0.7, ge=0, le=1, description="Weight of semantic vs keyword (1 = pure semantic)")
    fusion_method: Literal["rrf", "weighted_sum"] = Field(
        default="rrf",
        description="rrf: reciprocal rank fusion (ranks only, alpha unused); weighted_sum: alpha-weighted "
        "sum of min-max normalised scores",
    )
    rrf_k: int = Field(default=60, ge=1, le=1000, description="RRF constant k in 1 / (k + rank)")


class RerankerConfig(Strict):
    enabled: bool = Field(default=False, description="Rerank the top results")
    model: str | None = Field(default=None, description="Reranker model")
    top_k_to_rerank: int = Field(default=50, description="Candidates reranked")


class RetrievalConfig(Strict):
    default_top_k: int = Field(default=10, ge=1, le=100, description="Results returned by default")
    search_modes: list[SearchMode] = Field(
        default_factory=lambda: list[SearchMode](["semantic", "keyword", "hybrid"]), description="Modes offered"
    )
    hybrid_config: HybridConfig = Field(default_factory=HybridConfig)
    reranker: RerankerConfig = Field(default_factory=RerankerConfig)


class AllowedFilter(Strict):
    field: str = Field(description="Filterable metadata field (dotted chunk path)")
    operators: list[FilterOp] = Field(description="Operators allowed on it")


class SecurityProfile(Strict):
    require_auth: bool = Field(default=False, description="Require an API key")
    allowed_namespaces: list[str] | None = Field(default=None, description="Namespaces keys may search")


class RetrievalProfile(Strict):
    """``served/retrieval_profile.json``."""

    retrieval_config: RetrievalConfig = Field(default_factory=RetrievalConfig)
    allowed_filters: list[AllowedFilter] = Field(default_factory=list)
    security: SecurityProfile = Field(default_factory=SecurityProfile)


class SearchFilter(Strict):
    field: str = Field(description="Metadata field, e.g. 'source.uri'")
    op: FilterOp = Field(default="eq", description="Operator")
    value: Any = Field(description="Value (a list for 'in')")


class SearchRequest(Strict):
    query: str = Field(min_length=1, max_length=4096, description="Search text")
    top_k: int = Field(default=10, ge=1, le=100, description="Number of results")
    mode: SearchMode = Field(
        default="hybrid",
        description="hybrid (default): semantic and keyword fused; semantic: by meaning; keyword: BM25 term match",
    )
    filters: list[SearchFilter] = Field(default_factory=list, description="Metadata filters (ANDed)")
    offset: int = Field(default=0, ge=0, le=1000, description="Results to skip (paging)")


class SearchResult(Strict):
    chunk_id: str = Field(description="Chunk id")
    doc_id: str = Field(description="Document id")
    score: float = Field(description="Cosine similarity (semantic), BM25 score (keyword) or fused score (hybrid)")
    text: str = Field(description="Chunk text")
    source: ChunkSource = Field(description="Where the chunk's document came from (uri, record_id)")
    breadcrumb: str | None = Field(default=None, description="Heading path of the chunk, e.g. 'Guide > Install'")
    position: ChunkPosition = Field(description="Offsets, page and section of the chunk")
    metadata: ChunkMetadata = Field(description="Chunk metadata")
    run_id: str = Field(description="Run the result comes from")


# What a result's score is, per mode (shown by the CLI and the web page, returned by the API).
SCORE_MEANING: dict[str, str] = {
    "semantic": "cosine similarity of query and chunk vectors (-1..1, higher is closer in meaning)",
    "keyword": "BM25 relevance (0 and up, higher matches more and rarer query terms)",
    "hybrid": "reciprocal rank fusion: the sum over semantic and keyword of 1/(k + rank), k=60 by default "
    "(about 0.033 at most; ties go to the better single-mode rank)",
}


class SearchResponse(Strict):
    results: list[SearchResult]
    run_id: str
    mode: SearchMode
    score_meaning: str | None = Field(default=None, description="What the scores mean in this mode")
    indexed_at: str | None = Field(default=None, description="When the run's index phase completed")
