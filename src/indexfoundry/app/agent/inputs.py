"""What an agent may write to the single-purpose tools: their inputs, without destinations or secrets.

The operator's tool inputs (``app/tools/*``) follow the tool catalogue's schemas and take a header
map, a model's ``base_url`` and ``api_key_env``, a store's host, port, DSN and key variables,
a bind host. An agent's inputs here take none of these: the same fields otherwise (their
constraints and descriptions copied from the operator's with ``config_field``), and a
connection *name* where the operator's take a destination. ``extra="forbid"`` refuses anything
else with its key path. Source URLs are made canonical (``models.values.canonical_url``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from indexfoundry.app.tools.connect_models import (
    ConnectCrawlInput,
    ConnectLlmsTxtInput,
    ConnectPdfInput,
    ConnectRepoInput,
    ConnectSitemapInput,
    ConnectUrlInput,
)
from indexfoundry.app.tools.index import IndexEmbedInput, IndexUpsertInput
from indexfoundry.app.tools.profile import BuildProfileInput, ProfileRetrievalConfig
from indexfoundry.models.agent import (
    AgentReranker,
    EmbeddedStore,
    SourceUrl,
    optional_source_url,
    url_or_root_path,
)
from indexfoundry.models.base import Strict, config_field
from indexfoundry.models.connections import ConnectionName
from indexfoundry.models.embedders import BuiltinModel
from indexfoundry.models.ids import RunId, RunIdOrLatest
from indexfoundry.models.retrieval import AllowedFilter, HybridConfig, SearchMode, SecurityProfile
from indexfoundry.models.serve import RateLimitInput, ServeStartInput

FETCH = "The operator's fetch connection to use (its private hosts and credentials)"
OptionalUrl = Annotated[str | None, AfterValidator(optional_source_url)]


# ---------------------------------------------------------------- connect
class AgentConnectUrl(Strict):
    """Input of ``indexfoundry_connect_url`` for an agent (no headers: name a fetch connection)."""

    run_id: RunId = config_field(ConnectUrlInput, "run_id")
    url: SourceUrl = config_field(ConnectUrlInput, "url")
    fetch: ConnectionName | None = Field(default=None, description=FETCH)
    allowed_domains: list[str] | None = config_field(ConnectUrlInput, "allowed_domains")
    timeout_ms: int | None = config_field(ConnectUrlInput, "timeout_ms")
    force: bool = config_field(ConnectUrlInput, "force")


class AgentConnectSitemap(ConnectSitemapInput):
    sitemap_url: SourceUrl = config_field(ConnectSitemapInput, "sitemap_url")
    fetch: ConnectionName | None = Field(default=None, description=FETCH)


class AgentConnectPdf(ConnectPdfInput):
    source: Annotated[str, AfterValidator(url_or_root_path)] = config_field(
        ConnectPdfInput, "source", description="http(s) URL, or a PDF inside the server's roots"
    )


class AgentConnectCrawl(ConnectCrawlInput):
    url: SourceUrl = config_field(ConnectCrawlInput, "url")
    prefix: OptionalUrl = config_field(ConnectCrawlInput, "prefix")
    fetch: ConnectionName | None = Field(default=None, description=FETCH)


class AgentConnectRepo(ConnectRepoInput):
    path: str | None = config_field(ConnectRepoInput, "path", description="Repository inside the server's roots")
    url: OptionalUrl = config_field(ConnectRepoInput, "url", description="http(s) repository URL")


class AgentConnectLlmsTxt(ConnectLlmsTxtInput):
    url: SourceUrl = config_field(ConnectLlmsTxtInput, "url")
    fetch: ConnectionName | None = Field(default=None, description=FETCH)


# ---------------------------------------------------------------- index
class AgentEmbedModel(Strict):
    """A built-in model, or an embedding connection of the operator."""

    builtin: BuiltinModel | None = Field(default=None, description="local, local-int8 or hash (a test embedder)")
    connection: ConnectionName | None = Field(default=None, description="Embedding connection of the operator")
    dimensions: int | None = Field(default=None, ge=1, le=8192, description="hash: vector size")

    @model_validator(mode="after")
    def _one(self) -> AgentEmbedModel:
        if (self.builtin is None) == (self.connection is None):
            raise ValueError("name exactly one of builtin or connection")
        return self


class AgentIndexEmbed(Strict):
    """Input of ``indexfoundry_index_embed`` for an agent."""

    run_id: RunId = config_field(IndexEmbedInput, "run_id")
    chunks_path: str = config_field(IndexEmbedInput, "chunks_path")
    model: AgentEmbedModel = Field(description="Embedding model")
    batch_size: int = config_field(IndexEmbedInput, "batch_size")
    normalize_vectors: bool = config_field(IndexEmbedInput, "normalize_vectors")
    force: bool = config_field(IndexEmbedInput, "force")


class AgentIndexUpsert(Strict):
    """Input of ``indexfoundry_index_upsert`` for an agent: a store connection, or an embedded store in the run."""

    run_id: RunId = config_field(IndexUpsertInput, "run_id")
    embeddings_path: str = config_field(IndexUpsertInput, "embeddings_path")
    chunks_path: str = config_field(IndexUpsertInput, "chunks_path")
    connection: ConnectionName | None = Field(
        default=None, description="Store connection of the operator; default: an embedded store in the run"
    )
    provider: EmbeddedStore | None = Field(default=None, description="Embedded store in the run (default chroma)")
    collection: str = Field(default="indexfoundry", min_length=1, description="Collection/index name")
    namespace: str | None = Field(default=None, description="Namespace within collection")
    metadata_fields: list[str] = config_field(IndexUpsertInput, "metadata_fields")
    store_text: bool = config_field(IndexUpsertInput, "store_text")
    upsert_mode: Literal["insert", "upsert", "replace"] = config_field(IndexUpsertInput, "upsert_mode")
    batch_size: int = config_field(IndexUpsertInput, "batch_size")

    @model_validator(mode="after")
    def _store(self) -> AgentIndexUpsert:
        if self.connection is not None and self.provider is not None:
            raise ValueError("provider is for the embedded stores: the connection names its provider")
        return self


class AgentProfileRetrieval(Strict):
    default_top_k: int = config_field(ProfileRetrievalConfig, "default_top_k")
    search_modes: list[SearchMode] = config_field(ProfileRetrievalConfig, "search_modes")
    hybrid_config: HybridConfig | None = config_field(ProfileRetrievalConfig, "hybrid_config")
    reranker: AgentReranker | None = Field(default=None, description="Rerank with a reranker connection")


class AgentBuildProfile(Strict):
    """Input of ``indexfoundry_index_build_profile`` for an agent."""

    run_id: RunId = config_field(BuildProfileInput, "run_id")
    retrieval_config: AgentProfileRetrieval = config_field(BuildProfileInput, "retrieval_config")
    allowed_filters: list[AllowedFilter] | None = config_field(BuildProfileInput, "allowed_filters")
    security: SecurityProfile | None = config_field(BuildProfileInput, "security")


# ---------------------------------------------------------------- serve
class AgentServeStart(Strict):
    """Input of ``indexfoundry_serve_start`` for an agent: the server binds loopback."""

    run_id: RunIdOrLatest = config_field(ServeStartInput, "run_id")
    port: int = config_field(ServeStartInput, "port")
    cors_origins: list[str] | None = config_field(ServeStartInput, "cors_origins")
    rate_limit: RateLimitInput | None = config_field(ServeStartInput, "rate_limit")
    log_requests: bool = config_field(ServeStartInput, "log_requests")
