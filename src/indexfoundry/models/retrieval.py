"""Retrieval models shared by the CLI, the HTTP API and the MCP server (one source of truth)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

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


RERANK_PROVIDERS: tuple[str, ...] = ("cross-encoder", "cohere", "http")


class RerankerConfig(Strict):
    """The profile's ``reranker`` block, plus what the API providers need (key variable, server, retries)."""

    enabled: bool = Field(default=False, description="Rerank the top results after retrieval (every mode)")
    model: str | None = Field(
        default=None,
        description="cross-encoder:<local folder> | cohere:<model> | http:<base_url> (TEI/Infinity/Jina/vLLM /rerank)",
    )
    top_k_to_rerank: int = Field(default=50, ge=1, le=1000, description="Candidates reranked (the rest keep order)")
    api_key_env: str = Field(
        default="RERANK_API_KEY",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="Environment variable holding the API key (cohere: required; http: sent as a Bearer token)",
    )
    base_url: str | None = Field(default=None, description="cohere: another Cohere-compatible server")
    request_model: str | None = Field(default=None, description="http: the 'model' field sent to the server")
    batch_size: int = Field(default=8, ge=1, le=128, description="cross-encoder: pairs per forward pass")
    max_length: int = Field(default=256, ge=16, le=8192, description="cross-encoder: most tokens per pair")
    timeout_ms: int = Field(default=30000, ge=100, le=600000, description="API providers: timeout per request")
    max_retries: int = Field(default=2, ge=0, le=20, description="API providers: retries after a 429, 5xx or timeout")
    backoff_ms: int = Field(default=500, ge=0, le=600000, description="API providers: first backoff, doubling")

    @model_validator(mode="after")
    def _model_named(self) -> RerankerConfig:
        if self.model is not None:
            provider, sep, rest = self.model.partition(":")
            if not sep or not rest or provider not in RERANK_PROVIDERS:
                raise ValueError(
                    f"reranker.model '{self.model}' is not cross-encoder:<folder>, cohere:<model> or http:<base_url>"
                )
        elif self.enabled:
            raise ValueError(
                "reranker.enabled needs reranker.model (cross-encoder:<folder>, cohere:<model>, http:<url>)"
            )
        return self


class RetrievalConfig(Strict):
    default_top_k: int = Field(default=10, ge=1, le=100, description="Results returned by default")
    search_modes: list[SearchMode] = Field(
        default_factory=lambda: list[SearchMode](["semantic", "keyword", "hybrid"]), description="Modes offered"
    )
    hybrid_config: HybridConfig = Field(default_factory=HybridConfig)
    reranker: RerankerConfig = Field(default_factory=RerankerConfig)

    @property
    def default_mode(self) -> SearchMode:
        """The mode of a request that names none: hybrid when offered (as everywhere), else the first."""
        return "hybrid" if "hybrid" in self.search_modes or not self.search_modes else self.search_modes[0]


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


ExpandMode = Literal["none", "neighbors", "section"]


class Expansion(Strict):
    """What an expanded result's text covers (``expand: neighbors | section``)."""

    mode: ExpandMode = Field(description="How the hit was expanded")
    chunk_ids: list[str] = Field(description="Chunks the text covers, in document order")
    byte_start: int = Field(description="UTF-8 byte offset of the text in the extracted document")
    byte_end: int = Field(description="End of the text in the extracted document (exclusive)")
    heading_path: str | None = Field(default=None, description="The section taken (expand: section)")
    merged_into: str | None = Field(
        default=None, description="Chunk id of the better-ranked result whose text already holds this hit's context"
    )


class SearchRequest(Strict):
    query: str = Field(min_length=1, max_length=4096, description="Search text")
    top_k: int = Field(default=10, ge=1, le=1000, description="Number of results")
    mode: SearchMode = Field(
        default="hybrid",
        description="hybrid (default): semantic and keyword fused; semantic: by meaning; keyword: BM25 term match",
    )
    filters: list[SearchFilter] = Field(default_factory=list, description="Metadata filters (ANDed)")
    offset: int = Field(default=0, ge=0, le=1000, description="Results to skip (paging)")
    max_tokens: int | None = Field(
        default=None,
        ge=100,
        le=1_000_000,
        description="Token budget of the results as returned: whole results as fit, the rest via next_cursor",
    )
    cursor: str | None = Field(
        default=None, min_length=1, max_length=1024, description="next_cursor of the previous page of this request"
    )
    expand: ExpandMode = Field(
        default="none",
        description="Return each hit with its neighbouring chunks or its whole section (adjacent hits merged)",
    )


class SearchResult(Strict):
    chunk_id: str = Field(description="Chunk id")
    doc_id: str = Field(description="Document id")
    score: float = Field(
        description="Retrieval score: cosine similarity (semantic), BM25 (keyword) or fused score (hybrid)"
    )
    rerank_score: float | None = Field(
        default=None, description="The reranker's score, when the run reranks (results are ordered by it)"
    )
    text: str = Field(description="Chunk text")
    fence: str | None = Field(
        default=None,
        description="Opener line of the fenced code block text begins inside without showing it (a chunk cut "
        "from a long code block): shown as markdown, the text gets this line before it",
    )
    source: ChunkSource = Field(description="Where the chunk's document came from (uri, record_id)")
    breadcrumb: str | None = Field(default=None, description="Heading path of the chunk, e.g. 'Guide > Install'")
    position: ChunkPosition = Field(description="Offsets, page and section of the chunk")
    metadata: ChunkMetadata = Field(description="Chunk metadata")
    run_id: str = Field(description="Run the result comes from")
    fetched_at: str | None = Field(
        default=None, description="When the run read the source (source.content_hash: its hash)"
    )
    expanded: Expansion | None = Field(
        default=None, description="With expand: the chunks and byte range that text covers (chunk text otherwise)"
    )
    text_range: tuple[int, int] | None = Field(
        default=None,
        description="[start, end) characters of the chunk text in this result, when one chunk exceeds the budget",
    )


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
    reranker: str | None = Field(default=None, description="Reranker that ordered the results, if any")
    warnings: list[str] = Field(default_factory=list, description="What went wrong without failing the search")
    next_cursor: str | None = Field(default=None, description="Pass as cursor for the rest (budgeted requests)")
    tokens: int | None = Field(default=None, description="Tokens of the results returned (budgeted requests)")
    token_counter: str | None = Field(default=None, description="How tokens were counted (budgeted requests)")
