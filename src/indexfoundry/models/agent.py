"""What an agent may write to build a run: the agent's pipeline config, its own schema.

An MCP client's ``indexfoundry_pipeline_run`` takes :class:`AgentPipelineRun`, not the
operator's :class:`~indexfoundry.models.config.PipelineConfig`. It holds what a corpus is
made of — sources, extraction, chunking, filters, the retrieval profile — and the *names* of
the operator's connections (``connect.fetch``, ``index.embedding_connection``,
``index.connection``, ``serve.retrieval.reranker.connection``). It has no field for a service
URL, host, DSN, environment variable name, header, Ray cluster, key file or resource limit:
every model is ``extra="forbid"``, so such a key is refused by the schema, with its path,
before anything else looks at the call. What it does hold is bounded here:

- source URLs (``url``, a crawl's ``prefix``, a PDF ``source`` that is a URL, a repo ``url``)
  are http(s) and stored in canonical form (``models.values.canonical_url``); they are fetched
  later through the SSRF guard with the server's private-network allowances;
- folder, PDF and repo paths are resolved inside the server's roots when the config is
  turned into a full one (``app.agent``); a URL-looking path is refused there;
- the embedding model is a built-in one (``local``, ``local-int8``, ``hash``) unless a named
  connection supplies it; the store is an embedded Chroma or local store in the run folder
  unless a named connection supplies it;
- the HTTP API a run may start binds loopback (no ``host`` field); ``port`` is the port it
  listens on.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from indexfoundry.models.base import Strict, config_field
from indexfoundry.models.config import (
    ApiInfo,
    ConnectConfig,
    CrawlSource,
    ExtractConfig,
    FolderSource,
    IndexConfig,
    LlmsTxtSource,
    NormalizeConfig,
    PdfSource,
    PipelineConfig,
    RepoSource,
    ServeConfig,
    ServeEndpoint,
    SitemapSource,
    UrlSource,
    VectorDbConfig,
)
from indexfoundry.models.connections import ConnectionName
from indexfoundry.models.embedders import BuiltinModel
from indexfoundry.models.ids import RunId, RunRef
from indexfoundry.models.retrieval import AllowedFilter, HybridConfig, RerankerConfig, RetrievalConfig, SearchMode
from indexfoundry.models.values import canonical_url


def _source_url(value: str) -> str:
    return canonical_url(value)


def optional_source_url(value: str | None) -> str | None:
    return None if value is None else canonical_url(value)


def url_or_root_path(value: str) -> str:
    """A PDF source: an http(s) URL (made canonical) or a path (resolved inside the roots later)."""
    return canonical_url(value) if value.strip().lower().startswith(("http://", "https://")) else value


SourceUrl = Annotated[str, AfterValidator(_source_url)]
EmbeddedStore = Literal["chroma", "local"]


# ---------------------------------------------------------------- sources
class AgentUrlSource(UrlSource):
    url: SourceUrl = config_field(UrlSource, "url")


class AgentSitemapSource(SitemapSource):
    url: SourceUrl = config_field(SitemapSource, "url")


class AgentFolderSource(FolderSource):
    path: str = config_field(FolderSource, "path", description="Folder inside the server's roots")


class AgentPdfSource(PdfSource):
    source: Annotated[str, AfterValidator(url_or_root_path)] = config_field(
        PdfSource, "source", description="http(s) URL, or a path inside the server's roots"
    )


class AgentCrawlSource(CrawlSource):
    url: SourceUrl = config_field(CrawlSource, "url")
    prefix: Annotated[str | None, AfterValidator(optional_source_url)] = config_field(CrawlSource, "prefix")


class AgentRepoSource(RepoSource):
    path: str | None = config_field(RepoSource, "path", description="Repository inside the server's roots")
    url: Annotated[str | None, AfterValidator(optional_source_url)] = config_field(RepoSource, "url")


class AgentLlmsTxtSource(LlmsTxtSource):
    url: SourceUrl = config_field(LlmsTxtSource, "url")


AgentSource = Annotated[
    AgentUrlSource
    | AgentSitemapSource
    | AgentFolderSource
    | AgentPdfSource
    | AgentCrawlSource
    | AgentRepoSource
    | AgentLlmsTxtSource,
    Field(discriminator="type"),
]


# ---------------------------------------------------------------- sections
class AgentConnect(Strict):
    """Sources and how they are fetched (the SSRF guard and the server's allowances always apply)."""

    sources: list[AgentSource] = config_field(ConnectConfig, "sources")
    fetch: ConnectionName | None = Field(
        default=None,
        description="The operator's fetch connection to use (its private hosts and credentials)",
    )
    allowed_domains: list[str] = config_field(ConnectConfig, "allowed_domains")
    blocked_domains: list[str] = config_field(ConnectConfig, "blocked_domains")
    timeout_ms: int = config_field(ConnectConfig, "timeout_ms")
    max_file_size_mb: float = config_field(ConnectConfig, "max_file_size_mb")
    concurrency: int = config_field(ConnectConfig, "concurrency")
    respect_robots_txt: bool = config_field(ConnectConfig, "respect_robots_txt")


class AgentExtract(Strict):
    """How documents become text (worker count, time and memory limits are the operator's)."""

    pdf_mode: Literal["layout", "plain", "ocr"] = config_field(ExtractConfig, "pdf_mode")
    preserve_headings: bool = config_field(ExtractConfig, "preserve_headings")
    preserve_links: bool = config_field(ExtractConfig, "preserve_links")
    preserve_tables: bool = config_field(ExtractConfig, "preserve_tables")
    remove_selectors: list[str] = config_field(ExtractConfig, "remove_selectors")
    ocr_language: str = config_field(ExtractConfig, "ocr_language")
    csv_preview_rows: int = config_field(ExtractConfig, "csv_preview_rows")
    ocr_fallback: bool = config_field(ExtractConfig, "ocr_fallback")
    include_headers_footers: bool = config_field(ExtractConfig, "include_headers_footers")


class AgentVectorDb(Strict):
    """The collection written (the store itself is a named connection, or embedded in the run)."""

    provider: EmbeddedStore | None = Field(
        default=None, description="Without index.connection: an embedded store in the run folder (default chroma)"
    )
    collection: str = config_field(VectorDbConfig, "collection")
    namespace: str | None = config_field(VectorDbConfig, "namespace")
    metadata_fields: list[str] = config_field(VectorDbConfig, "metadata_fields")
    store_text: bool = config_field(VectorDbConfig, "store_text")
    upsert_mode: Literal["insert", "upsert", "replace"] = config_field(VectorDbConfig, "upsert_mode")
    batch_size: int = config_field(VectorDbConfig, "batch_size")


class AgentIndex(Strict):
    """Which model embeds and which store holds the vectors: built-ins, or the operator's connections."""

    embedding_model: BuiltinModel | None = Field(
        default=None, description="Built-in model (default local); or name an embedding_connection"
    )
    embedding_connection: ConnectionName | None = Field(
        default=None, description="Embedding connection of the operator (model, API, key)"
    )
    connection: ConnectionName | None = Field(
        default=None, description="Store connection of the operator; default: an embedded store in the run"
    )
    batch_size: int = config_field(IndexConfig, "batch_size")
    long_chunks: Literal["windows", "truncate"] = config_field(IndexConfig, "long_chunks")
    normalize_vectors: bool = config_field(IndexConfig, "normalize_vectors")
    dimensions: int | None = config_field(IndexConfig, "dimensions", description="hash: vector size")
    vector_db: AgentVectorDb = Field(default_factory=AgentVectorDb, description="Collection and how to write it")

    @model_validator(mode="after")
    def _one_model(self) -> AgentIndex:
        if self.embedding_model is not None and self.embedding_connection is not None:
            raise ValueError("name embedding_model or embedding_connection, not both")
        if self.connection is not None and self.vector_db.provider is not None:
            raise ValueError("vector_db.provider is for the embedded stores: the connection names its provider")
        return self


class AgentReranker(Strict):
    """Rerank with a reranker connection of the operator."""

    enabled: bool = config_field(RerankerConfig, "enabled")
    connection: ConnectionName | None = Field(default=None, description="Reranker connection of the operator")
    top_k_to_rerank: int = config_field(RerankerConfig, "top_k_to_rerank")

    @model_validator(mode="after")
    def _named(self) -> AgentReranker:
        if self.enabled and self.connection is None:
            raise ValueError("enabled needs a reranker connection")
        return self


class AgentRetrieval(Strict):
    default_top_k: int = config_field(RetrievalConfig, "default_top_k")
    search_modes: list[SearchMode] = config_field(RetrievalConfig, "search_modes")
    hybrid_config: HybridConfig = config_field(
        RetrievalConfig, "hybrid_config", description="How hybrid search fuses the two rankings"
    )
    reranker: AgentReranker = Field(default_factory=AgentReranker, description="Reranking")


class AgentServe(Strict):
    """The run's HTTP API (bound to loopback) and retrieval profile."""

    auto_start: bool = config_field(ServeConfig, "auto_start")
    port: int | None = config_field(ServeConfig, "port", description="Port the API listens on (loopback)")
    api_info: ApiInfo = config_field(ServeConfig, "api_info")
    endpoints: list[ServeEndpoint] = config_field(ServeConfig, "endpoints")
    cors_origins: list[str] = config_field(ServeConfig, "cors_origins")
    log_requests: bool = config_field(ServeConfig, "log_requests")
    require_auth: bool = config_field(ServeConfig, "require_auth")
    allowed_namespaces: list[str] | None = config_field(ServeConfig, "allowed_namespaces")
    retrieval: AgentRetrieval = Field(default_factory=AgentRetrieval, description="Retrieval profile")
    allowed_filters: list[AllowedFilter] | None = config_field(ServeConfig, "allowed_filters")


class AgentPipelineRun(Strict):
    """``indexfoundry_pipeline_run`` for an agent: the pipeline config, naming the operator's connections."""

    run_id: RunId | None = config_field(PipelineConfig, "run_id")
    base_run_id: RunRef | None = Field(
        default=None, description="Reuse everything unchanged from this run (id or 'latest'): incremental run"
    )
    connect: AgentConnect = Field(description="Sources (urls, folders inside the roots, ...) and fetching")
    extract: AgentExtract = Field(default_factory=AgentExtract, description="Text extraction")
    normalize: NormalizeConfig = Field(default_factory=NormalizeConfig, description="Chunking, dedupe, enrichment")
    index: AgentIndex = Field(default_factory=AgentIndex, description="Embedding model and vector store, by name")
    serve: AgentServe = Field(default_factory=AgentServe, description="HTTP API and retrieval profile")
    force: bool = config_field(PipelineConfig, "force")
    stop_on_error: bool = config_field(PipelineConfig, "stop_on_error")
    max_shrink: float = config_field(PipelineConfig, "max_shrink")
