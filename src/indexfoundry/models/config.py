"""Configuration models: the pipeline config (mirrors the seed's PipelineRunInputSchema) and the
global ``indexfoundry.config.json``. The same models produce ``indexfoundry config schema``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.base import Strict
from indexfoundry.models.embedding import EmbeddingModelSpec, parse_embedding_model
from indexfoundry.models.ids import RunId
from indexfoundry.models.retrieval import AllowedFilter, RetrievalConfig
from indexfoundry.models.validation import validation_error

ChunkStrategy = Literal["fixed_chars", "by_paragraph", "by_heading", "by_page", "by_sentence", "recursive"]
# Header names whose values are credentials: only ever taken from the environment (headers_env).
SECRET_HEADER = re.compile(r"authorization|cookie|token|secret|passw|api[-_]?key|auth", re.IGNORECASE)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
VectorProvider = Literal["milvus", "pinecone", "weaviate", "qdrant", "chroma", "local", "pgvector"]


# ---------------------------------------------------------------- sources (connect)
class RecordsSpec(Strict):
    """Split a csv/jsonl/ndjson file into one document per record."""

    id_field: str = Field(description="Field holding each record's id")
    text_fields: list[str] = Field(min_length=1, description="Fields joined to form the document text")
    metadata_fields: list[str] = Field(default_factory=list, description="Fields kept as metadata")


class RenderOptions(Strict):
    """How pages of a url/sitemap/crawl source are fetched: plain HTTP, or rendered in Chromium."""

    render: Literal["http", "browser"] = Field(
        default="http", description="'browser': render pages in headless Chromium (the 'browser' extra)"
    )
    wait_until: Literal["networkidle", "load", "domcontentloaded"] = Field(
        default="networkidle", description="render: browser: page event to wait for before reading the DOM"
    )
    wait_for_selector: str | None = Field(
        default=None, max_length=500, description="render: browser: also wait for this CSS selector"
    )


class UrlSource(RenderOptions):
    type: Literal["url"] = Field(description="A single URL")
    url: str = Field(description="URL to fetch")
    name: str | None = Field(default=None, description="Source name (defaults to the URL)")


class SitemapSource(RenderOptions):
    type: Literal["sitemap"] = Field(description="A sitemap to crawl")
    url: str = Field(description="Sitemap XML URL")
    max_pages: int | None = Field(default=None, ge=1, le=10000, description="Maximum pages to fetch")
    include_patterns: list[str] = Field(default_factory=list, description="Regexes of URLs to include")
    exclude_patterns: list[str] = Field(default_factory=list, description="Regexes of URLs to exclude")
    name: str | None = Field(default=None, description="Source name (defaults to the URL)")


class FolderSource(Strict):
    type: Literal["folder"] = Field(description="A local folder")
    path: str = Field(description="Folder path; relative paths are relative to the config file")
    glob: str = Field(default="**/*", description="Glob of files to include, e.g. '**/*.md'")
    exclude_patterns: list[str] = Field(
        default_factory=list, description="Globs (relative to the folder) of files to leave out"
    )
    max_file_size_mb: float = Field(default=50, gt=0, le=500, description="Skip files larger than this")
    include_hidden: bool = Field(default=False, description="Include dot-files and dot-folders (never .git)")
    name: str | None = Field(
        default=None, description="Source name used in document uris (defaults to the folder's name)"
    )
    records: RecordsSpec | None = Field(default=None, description="Split csv/jsonl files into records")


class PdfSource(Strict):
    type: Literal["pdf"] = Field(description="One PDF, by URL or local path")
    source: str = Field(description="URL or local path of the PDF")
    name: str | None = Field(default=None, description="Source name")


class CrawlSource(RenderOptions):
    """Follow links from a start URL, breadth-first, within a scope."""

    type: Literal["crawl"] = Field(description="Crawl links from a start URL")
    url: str = Field(description="Start URL")
    scope: Literal["host", "prefix"] = Field(
        default="host", description="Follow links on the start URL's host, or only under 'prefix'"
    )
    prefix: str | None = Field(
        default=None, description="scope: prefix: URL prefix (default: the start URL up to its last '/')"
    )
    max_depth: int = Field(default=3, ge=0, le=50, description="Link hops followed from the start URL")
    max_pages: int = Field(default=100, ge=1, le=10000, description="Maximum pages fetched")
    include_patterns: list[str] = Field(default_factory=list, description="Regexes a followed URL must match")
    exclude_patterns: list[str] = Field(default_factory=list, description="Regexes of URLs never followed")
    requests_per_second: float = Field(default=5.0, gt=0, le=1000, description="Most requests per second to one host")
    name: str | None = Field(default=None, description="Source name (defaults to the start URL)")


class RepoSource(Strict):
    """Files of a git repository at a ref, read from git's object store (no checkout)."""

    type: Literal["repo"] = Field(description="A git repository")
    path: str | None = Field(default=None, description="Local repository; relative to the config file")
    url: str | None = Field(default=None, description="http(s) URL of a remote repository (cloned, guarded)")
    ref: str = Field(default="HEAD", min_length=1, max_length=250, description="Branch, tag or commit")
    glob: str = Field(default="**/*", description="Glob of files to include, e.g. 'docs/**/*.md'")
    exclude_patterns: list[str] = Field(default_factory=list, description="Globs of files to leave out")
    max_file_size_mb: float = Field(default=50, gt=0, le=500, description="Skip files larger than this")
    max_repo_size_mb: float = Field(
        default=2048, gt=0, le=1_048_576, description="A url repository's clone may not grow past this"
    )
    name: str | None = Field(default=None, description="Source name used in uris (default: the repo's name)")

    @model_validator(mode="after")
    def _one_location(self) -> RepoSource:
        if (self.path is None) == (self.url is None):
            raise ValueError("a repo source needs exactly one of 'path' or 'url'")
        if self.ref.startswith("-"):
            raise ValueError("ref must not start with '-'")
        return self


class LlmsTxtSource(Strict):
    """A site's /llms.txt: index the pages it links (their markdown when offered)."""

    type: Literal["llms_txt"] = Field(description="A site's llms.txt")
    url: str = Field(description="URL of llms.txt or llms-full.txt, or the site root (then /llms.txt)")
    max_pages: int = Field(default=200, ge=1, le=10000, description="Maximum linked pages fetched")
    same_host: bool = Field(default=True, description="Only follow links on the llms.txt host")
    prefer_markdown: bool = Field(default=True, description="Try '<page>.md' first (the llms.txt convention)")
    name: str | None = Field(default=None, description="Source name (defaults to the URL)")


Source = Annotated[
    UrlSource | SitemapSource | FolderSource | PdfSource | CrawlSource | RepoSource | LlmsTxtSource,
    Field(discriminator="type"),
]


class ConnectConfig(Strict):
    sources: list[Source] = Field(min_length=1, description="Content sources")
    allowed_domains: list[str] = Field(default_factory=list, description="Domain allowlist (empty = all)")
    blocked_domains: list[str] = Field(default_factory=list, description="Domains never fetched")
    allow_private_networks: bool = Field(
        default=False, description="Allow fetching loopback/private/link-local addresses (off: SSRF guard)"
    )
    timeout_ms: int = Field(default=30000, ge=1000, le=60000, description="Request timeout")
    max_file_size_mb: float = Field(default=50, gt=0, le=500, description="Largest file fetched")
    user_agent: str = Field(default="IndexFoundry/1.0", description="HTTP User-Agent")
    headers: dict[str, str] = Field(
        default_factory=dict, description="Custom HTTP headers (no secrets: those go in headers_env)"
    )
    headers_env: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "HTTP headers whose values come from environment variables, {header: ENV_VAR} (e.g. "
            "Authorization: DOCS_AUTH); only the variable's name is stored, never its value"
        ),
    )
    headers_env_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts ('name' or 'name:port') headers_env is sent to; empty: every host the run fetches",
    )
    concurrency: int = Field(default=3, ge=1, le=10, description="Parallel fetches")
    respect_robots_txt: bool = Field(default=True, description="Obey robots.txt when crawling")
    allowed_private_hosts: list[str] = Field(
        default_factory=list,
        description=(
            "Hosts ('name' or 'name:port') that may be fetched although they resolve to loopback/private "
            "addresses (an intranet docs server); every other private address stays blocked, redirects included"
        ),
    )
    max_retries: int = Field(
        default=3, ge=0, le=10, description="Retries after a timeout, connection error, 429 or 5xx"
    )
    retry_backoff_ms: int = Field(
        default=500, ge=0, le=60000, description="First retry delay; doubles each retry (Retry-After wins)"
    )
    max_redirects: int = Field(default=10, ge=0, le=30, description="Redirect hops followed (each one checked)")

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, value: dict[str, str]) -> dict[str, str]:
        # A header value written here is copied into the run's config.json: secrets never are.
        for name in value:
            if SECRET_HEADER.search(name):
                raise ValueError(
                    f"header '{name}' looks like a secret and would be stored in the run's config.json: "
                    f"put it in connect.headers_env as '{name}: ENV_VAR' instead"
                )
        return value

    @field_validator("headers_env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, env in value.items():
            if not ENV_NAME.fullmatch(env):
                raise ValueError(f"headers_env.{name}: '{env}' is not an environment variable name")
        return value


# ---------------------------------------------------------------- extract
class ExtractConfig(Strict):
    pdf_mode: Literal["layout", "plain", "ocr"] = Field(default="layout", description="PDF extraction mode")
    preserve_headings: bool = Field(default=True, description="Keep headings as markdown")
    preserve_links: bool = Field(default=False, description="Keep links as [text](url)")
    preserve_tables: bool = Field(default=True, description="Convert tables to markdown")
    remove_selectors: list[str] = Field(default_factory=list, description="CSS selectors removed from HTML")
    ocr_language: str = Field(default="eng", description="Tesseract language code")
    csv_preview_rows: int = Field(default=100, ge=1, le=1000, description="Rows of a CSV put in its text")
    pdf_password_env: str | None = Field(
        default=None, description="Environment variable holding the password of encrypted PDFs"
    )
    ocr_fallback: bool = Field(
        default=True, description="OCR the PDF pages that have images but no text layer (needs tesseract)"
    )
    ocr_dpi: int = Field(default=300, ge=72, le=600, description="Resolution PDF pages are rendered at for OCR")
    include_headers_footers: bool = Field(default=False, description="docx: include page headers and footers")
    workers: int | None = Field(
        default=None, ge=0, le=64, description="Extraction worker processes (default: CPU cores; 0: in-process)"
    )
    timeout_s: float = Field(
        default=300, gt=0, le=86400, description="Time limit per document; over it the document is a PARSE_ERROR"
    )
    memory_mb: int = Field(
        default=2048, ge=256, le=65536, description="Memory limit per worker; over it the document is a PARSE_ERROR"
    )


# ---------------------------------------------------------------- normalize
class DedupeOptions(Strict):
    method: Literal["exact", "simhash", "minhash"] = Field(default="exact", description="Dedupe method")
    similarity_threshold: float = Field(default=0.95, ge=0.8, le=1.0, description="Fuzzy threshold")
    scope: Literal["global", "per_document"] = Field(default="global", description="Dedupe scope")


class RegexTag(Strict):
    pattern: str = Field(description="Regex with a capture group")
    tag_name: str = Field(description="Tag name")
    flags: str = Field(default="gi", description="Regex flags")


class SectionPattern(Strict):
    pattern: str = Field(description="Regex matched against chunk text")
    section_name: str = Field(description="Section assigned when it matches")


class EnrichRules(Strict):
    detect_language: bool = Field(default=True, description="Detect each chunk's language")
    regex_tags: list[RegexTag] = Field(default_factory=list, description="Extract tags via regex")
    section_patterns: list[SectionPattern] = Field(default_factory=list, description="Section detection")
    extract_dates: bool = Field(default=False, description="Extract dates (ISO 8601)")
    taxonomy: dict[str, list[str]] = Field(default_factory=dict, description="Category -> terms")


class NormalizeConfig(Strict):
    chunk_strategy: ChunkStrategy = Field(default="recursive", description="Chunking strategy")
    max_chars: int = Field(default=1500, ge=100, le=10000, description="Maximum characters per chunk")
    max_tokens: int | None = Field(
        default=None,
        ge=16,
        le=100000,
        description=(
            "Maximum tokens of a chunk's embedded text (breadcrumb included), counted with the embedding "
            "model's tokenizer; longer chunks are split further (never above the model's window, 256 for "
            "local and local-int8). Default: no split; chunks over the window are counted and warned about"
        ),
    )
    min_chars: int = Field(default=100, ge=50, le=500, description="Minimum characters per chunk")
    overlap_chars: int = Field(default=150, ge=0, le=500, description="Overlap between chunks")
    split_hierarchy: list[str] = Field(
        default_factory=lambda: ["\n\n", "\n", ". ", " "], description="Separators for recursive splitting"
    )
    merge_short_sections: bool = Field(
        default=True, description="by_heading: merge sections under min_chars into their parent"
    )
    dedupe: bool | DedupeOptions = Field(default=True, description="Deduplicate chunks")
    detect_language: bool = Field(default=True, description="Detect each chunk's language")
    enrich: EnrichRules | None = Field(default=None, description="Rule-based enrichment")


# ---------------------------------------------------------------- index
class VectorDbConfig(Strict):
    provider: VectorProvider = Field(default="chroma", description="Vector database provider")
    collection: str = Field(default="indexfoundry", description="Collection name")
    namespace: str | None = Field(default=None, description="Namespace within the collection")
    connection: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Provider connection: chroma {path} (embedded) or {host, port}; local {path}; qdrant {path} "
            "(local mode) or {url} / {host, port}, api_key_env; milvus {uri} (Milvus Lite file or server URL), "
            "token_env; pgvector {dsn} or {dsn_env} (no password: PGPASSWORD or password_env), schema"
        ),
    )
    metadata_fields: list[str] = Field(
        default_factory=lambda: ["source.uri", "source.type", "metadata.language", "position.page"],
        description="Chunk fields (dotted paths) stored as filterable vector metadata, besides the built-in ones",
    )
    store_text: bool = Field(default=True, description="Store chunk text in the vector store")
    upsert_mode: Literal["insert", "upsert", "replace"] = Field(
        default="upsert",
        description=(
            "upsert: write new and changed vectors, prune ids no longer in the run; insert: only add ids the "
            "store lacks, never overwrite or prune; replace: empty the collection (or namespace) first"
        ),
    )
    batch_size: int = Field(
        default=100, ge=1, le=1000, description="Vectors per upsert request (capped by the store's own limit)"
    )


class RetryConfig(Strict):
    max_retries: int = Field(default=3, ge=0, le=20, description="Retries after a 429, 5xx or timeout")
    backoff_ms: int = Field(
        default=1000, ge=0, le=600000, description="First backoff; doubles on each retry (Retry-After wins)"
    )


class IndexConfig(Strict):
    embedding_model: str = Field(
        default="local",
        description=(
            "'local' (offline MiniLM), 'local-int8' (its int8 ONNX export), 'hash', or 'provider:model' "
            "(sentence-transformers:<name|path>, openai:<model>, cohere:<model>)"
        ),
    )
    batch_size: int = Field(default=32, ge=1, le=500, description="Texts per embedding call")
    long_chunks: Literal["windows", "truncate"] = Field(
        default="windows",
        description=(
            "A chunk longer than the embedding model's token window (known for local and local-int8: 256): "
            "'windows' embeds it in overlapping windows too and search scores it by its best window; "
            "'truncate' embeds what the model reads (its first window) only"
        ),
    )
    normalize_vectors: bool = Field(default=True, description="L2-normalise vectors")
    dimensions: int | None = Field(
        default=None, ge=1, description="Output dimensions, for models that support shortening (openai, cohere)"
    )
    api_key_env: str = Field(default="EMBEDDING_API_KEY", description="Env var holding the API key")
    base_url: str | None = Field(
        default=None, description="API base URL (openai: any OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1)"
    )
    timeout_ms: int = Field(default=60000, ge=1000, le=600000, description="Timeout of one embedding request")
    retry_config: RetryConfig = Field(default_factory=RetryConfig, description="Retries of API providers")
    vector_db: VectorDbConfig = Field(default_factory=VectorDbConfig, description="Where vectors go")

    @property
    def embedding_spec(self) -> EmbeddingModelSpec:
        """``embedding_model`` as the typed spec (CONFIG_INVALID if it names no known model)."""
        return parse_embedding_model(self.embedding_model)


# ---------------------------------------------------------------- serve
ServeEndpoint = Literal[
    "search",
    "search_semantic",
    "search_hybrid",
    "search_keyword",
    "get_document",
    "get_chunk",
    "health",
    "stats",
    "check_freshness",
]
ALL_SERVE_ENDPOINTS: tuple[ServeEndpoint, ...] = (
    "search",
    "search_semantic",
    "search_hybrid",
    "search_keyword",
    "get_document",
    "get_chunk",
    "health",
    "stats",
    "check_freshness",
)


class ApiInfo(Strict):
    """The seed's ``api_info`` of ``indexfoundry_serve_openapi``."""

    title: str = Field(default="IndexFoundry Search API", min_length=1, max_length=200, description="API title")
    version: str = Field(default="1.0.0", min_length=1, max_length=50, description="API version")
    description: str | None = Field(default=None, max_length=5000, description="API description")
    base_path: str = Field(
        default="/api/v1",
        pattern=r"^(/[A-Za-z0-9._~-]+)*$",
        max_length=200,
        description="Path prefix of every endpoint ('' for none), e.g. '/api/v1'",
    )


class RateLimitConfig(Strict):
    """Per-client token bucket: ``burst`` requests at once, refilled at ``requests_per_minute``."""

    enabled: bool = Field(default=True, description="Limit requests per client (false: no limit)")
    requests_per_minute: int = Field(default=60, ge=1, le=1_000_000, description="Sustained requests per minute")
    burst: int = Field(default=10, ge=1, le=100_000, description="Requests a client may make at once")


class ServeConfig(Strict):
    auto_start: bool = Field(default=False, description="Start the HTTP API after the run")
    host: str = Field(default="127.0.0.1", description="Bind address")
    port: int | None = Field(default=None, ge=1024, le=65535, description="Port")
    api_info: ApiInfo = Field(default_factory=ApiInfo, description="Title, version and base path of the API")
    endpoints: list[ServeEndpoint] = Field(
        default_factory=lambda: list(ALL_SERVE_ENDPOINTS), description="Endpoints the HTTP API offers"
    )
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS (empty: none)")
    rate_limit: RateLimitConfig = Field(default_factory=RateLimitConfig, description="Per-client rate limit")
    log_requests: bool = Field(default=True, description="Log each request to the run's logs/requests.ndjson")
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description=(
            "Addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto "
            "headers are believed, for the rate limit and the request log; empty (default): none, the "
            "connecting address is the client"
        ),
    )
    require_auth: bool = Field(default=False, description="Require an API key (written to the retrieval profile)")
    allowed_namespaces: list[str] | None = Field(
        default=None, description="Namespaces that may be searched (written to the retrieval profile)"
    )
    api_keys_env: str = Field(
        default="INDEXFOUNDRY_API_KEYS", description="Environment variable holding comma-separated API keys"
    )
    api_key_file: str | None = Field(
        default=None, description="JSON file of API keys (keys never go in this config file)"
    )
    max_request_bytes: int = Field(default=16384, ge=1024, le=10_485_760, description="Largest request body")
    max_query_chars: int = Field(default=2048, ge=1, le=4096, description="Longest search query")
    max_top_k: int = Field(default=100, ge=1, le=100, description="Largest top_k a request may ask for")
    freshness_reuse_s: float = Field(
        default=300, ge=0, le=86400, description="/freshness reuses a source's check for this long (0: never)"
    )
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig,
        description="Retrieval profile: default top_k, search modes offered, hybrid fusion",
    )
    allowed_filters: list[AllowedFilter] | None = Field(
        default=None, description="Filterable fields and operators (None: the built-in list)"
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_addresses(cls, value: list[str]) -> list[str]:
        import ipaddress

        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"trusted_proxies entry '{entry}' is not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/24)"
                ) from None
        return value


class ExecutionConfig(Strict):
    """Where a run's per-document and per-batch work executes. Changes how fast, never what:
    it is left out of the frozen run config and of every phase fingerprint."""

    engine: Literal["local", "ray"] = Field(
        default="local", description="local: this machine's processes; ray: a Ray cluster (extra 'ray')"
    )
    address: str = Field(
        default="auto",
        pattern=r"^(auto|ray://[^\s/]+:\d+|[^\s/:]+:\d+)$",
        description="Ray cluster: auto (the cluster this machine belongs to), HOST:PORT of the head node "
        "(GCS port), or ray://HOST:PORT (Ray Client)",
    )
    embed_workers: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Embedding actors (each loads the model once); default: one per CPU "
        "(GPU: one per GPU) in the cluster",
    )
    num_gpus: float = Field(
        default=0, ge=0, le=8, description="GPUs per embedding actor (0: CPU workers; e.g. 1 on GPU nodes)"
    )
    num_cpus: float = Field(default=1, gt=0, le=64, description="CPUs per extract/normalize task and per actor")
    max_retries: int = Field(
        default=3, ge=0, le=20, description="Retries of a task whose worker or node died (then the run fails)"
    )
    raw_transfer: Literal["object_store", "shared_path"] = Field(
        default="object_store",
        description="How raw files reach workers: through Ray's object store, or by path "
        "(every node must see the runs folder at the same path)",
    )
    connect_timeout_s: float = Field(
        default=30, gt=0, le=600, description="How long to wait for the cluster before the run is refused"
    )


class PipelineConfig(Strict):
    """A pipeline config file (YAML or JSON): one per indexed corpus."""

    run_id: RunId | None = Field(default=None, description="Run id to (re)use; new UUID v7 if omitted")
    connect: ConnectConfig
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    normalize: NormalizeConfig = Field(default_factory=NormalizeConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    force: bool = Field(default=False, description="Rerun every phase even if unchanged")
    stop_on_error: bool = Field(
        default=False, description="Stop the run at the first failed document instead of going on"
    )
    max_shrink: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Share of its base run's documents or chunks a run may lose before it fails (1: no check)",
    )
    execution: ExecutionConfig = Field(
        default_factory=ExecutionConfig, description="Executor: local processes or a Ray cluster"
    )


# ---------------------------------------------------------------- global config
class StorageConfig(Strict):
    runs_dir: str = Field(default="./runs", description="Where runs are kept")
    max_runs: int = Field(default=100, ge=1, description="Runs kept before cleanup removes the oldest")
    cleanup_policy: Literal["fifo"] = Field(default="fifo", description="Which runs cleanup removes first")


class ConnectDefaults(Strict):
    timeout_ms: int = 30000
    max_file_size_mb: float = 50
    user_agent: str = "IndexFoundry/1.0"


class ExtractDefaults(Strict):
    pdf_extractor: Literal["pdfminer.six"] = "pdfminer.six"
    pdf_mode: Literal["layout", "plain", "ocr"] = "layout"
    ocr_engine: Literal["tesseract"] = "tesseract"


class NormalizeDefaults(Strict):
    chunk_strategy: ChunkStrategy = "recursive"
    max_chars: int = 1500
    overlap_chars: int = 150


class IndexDefaults(Strict):
    embedding_provider: str = "local"
    embedding_model: str = "local"
    batch_size: int = 32


class Defaults(Strict):
    connect: ConnectDefaults = Field(default_factory=ConnectDefaults)
    extract: ExtractDefaults = Field(default_factory=ExtractDefaults)
    normalize: NormalizeDefaults = Field(default_factory=NormalizeDefaults)
    index: IndexDefaults = Field(default_factory=IndexDefaults)


class NetworkBounds(Strict):
    """Private networks a caller's fetches may reach at most (an MCP server's agent policy).

    Applied on top of a run's own connect settings: it can only narrow them.
    """

    allow_private_networks: bool = False
    allowed_private_hosts: list[str] = Field(default_factory=list)


class SecurityConfig(Strict):
    allowed_domains: list[str] = Field(default_factory=list)
    blocked_domains: list[str] = Field(default_factory=lambda: ["localhost", "127.0.0.1"])
    max_concurrent_fetches: int = Field(default=5, ge=1)
    allow_private_networks: bool = Field(default=False)


class GlobalConfig(Strict):
    """``indexfoundry.config.json``: defaults shared by every pipeline run."""

    version: str = "1.0.0"
    storage: StorageConfig = Field(default_factory=StorageConfig)
    defaults: Defaults = Field(default_factory=Defaults)
    pinned_versions: dict[str, str] = Field(default_factory=dict)
    security: SecurityConfig = Field(default_factory=SecurityConfig)


GLOBAL_CONFIG_FILE = "indexfoundry.config.json"
ENV_GLOBAL_CONFIG = "INDEXFOUNDRY_CONFIG"


# ---------------------------------------------------------------- loading
def read_config_file(path: Path) -> dict[str, Any]:
    """Parse a YAML or JSON file into a mapping, with CONFIG_INVALID on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigInvalid(f"config file {path} does not exist", suggestion="Check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigInvalid(f"cannot read config file {path}: {exc}", suggestion="Check the file") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigInvalid(
            f"{path} is not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {' '.join(str(exc).split())}",
            suggestion="Fix the syntax at the position shown",
        ) from None
    if not isinstance(data, dict):
        raise ConfigInvalid(f"{path} must contain a mapping at the top level", suggestion="See README")
    return data


def load_global_config(path: Path | None = None) -> GlobalConfig:
    """Load the global config: explicit path, $INDEXFOUNDRY_CONFIG, ./indexfoundry.config.json, or defaults."""
    if path is None:
        env = os.environ.get(ENV_GLOBAL_CONFIG)
        if env:
            path = Path(env)
        elif Path(GLOBAL_CONFIG_FILE).is_file():
            path = Path(GLOBAL_CONFIG_FILE)
    if path is None:
        return GlobalConfig()
    try:
        return GlobalConfig.model_validate(read_config_file(path))
    except ValidationError as exc:
        raise validation_error(exc, str(path), GlobalConfig) from None


def inherited_blocked_domains(connect: dict[str, Any], inherited: list[str]) -> list[str]:
    """Blocked domains a pipeline config inherits from the global config.

    An explicit opt-in beats a default: with ``allow_private_networks: true`` the inherited
    entries naming loopback/private hosts (the defaults ``localhost``, ``127.0.0.1``) are dropped,
    and so are entries naming one of ``allowed_private_hosts``. ``blocked_domains`` written in the
    pipeline config itself always apply in full.
    """
    import ipaddress

    def host_of(entry: str) -> str:
        # "name", "name:port", "[v6]:port" or a bare IPv6 address -> the host, lower case
        entry = entry.strip().lower()
        if entry.startswith("["):
            return entry[1:].split("]", 1)[0]
        return entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry

    def names_private(entry: str) -> bool:
        name = host_of(entry).rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            return True
        try:
            return not ipaddress.ip_address(name).is_global
        except ValueError:
            return False

    allowed_hosts = {host_of(str(h)) for h in connect.get("allowed_private_hosts") or []}
    private_ok = connect.get("allow_private_networks") is True
    return [
        entry
        for entry in inherited
        if not (private_ok and names_private(entry)) and host_of(entry) not in allowed_hosts
    ]


def _apply_defaults(raw: dict[str, Any], glob: GlobalConfig) -> dict[str, Any]:
    """Fill keys the pipeline config leaves out from the global config's defaults."""
    data: dict[str, Any] = json.loads(json.dumps(raw))  # deep copy of plain data
    d = glob.defaults

    def fill(section: str, values: dict[str, Any]) -> None:
        target = data.get(section)
        if target is None:
            target = {}
            data[section] = target
        if isinstance(target, dict):
            for key, value in values.items():
                target.setdefault(key, value)

    connect = data.get("connect")
    if isinstance(connect, dict):
        connect.setdefault("timeout_ms", d.connect.timeout_ms)
        connect.setdefault("max_file_size_mb", d.connect.max_file_size_mb)
        connect.setdefault("user_agent", d.connect.user_agent)
        if glob.security.allowed_domains:
            connect.setdefault("allowed_domains", list(glob.security.allowed_domains))
        connect.setdefault("allow_private_networks", glob.security.allow_private_networks)
        if "blocked_domains" not in connect:
            connect["blocked_domains"] = inherited_blocked_domains(connect, glob.security.blocked_domains)
    fill("extract", {"pdf_mode": d.extract.pdf_mode})
    fill(
        "normalize",
        {
            "chunk_strategy": d.normalize.chunk_strategy,
            "max_chars": d.normalize.max_chars,
            "overlap_chars": d.normalize.overlap_chars,
        },
    )
    fill("index", {"embedding_model": d.index.embedding_model, "batch_size": d.index.batch_size})
    return data


def parse_pipeline_config(
    raw: dict[str, Any], base_dir: Path | None = None, glob: GlobalConfig | None = None
) -> PipelineConfig:
    """Validate a pipeline config mapping; folder paths are resolved against ``base_dir``."""
    data = _apply_defaults(raw, glob or GlobalConfig())
    try:
        config = PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, "pipeline config", PipelineConfig) from None
    if base_dir is not None:
        for source in config.connect.sources:
            if isinstance(source, FolderSource):
                if source.name is None:
                    source.name = Path(source.path).name or "folder"
                source.path = str((base_dir / source.path).resolve())
            elif isinstance(source, PdfSource) and "://" not in source.source:
                source.source = str((base_dir / source.source).resolve())
            elif isinstance(source, RepoSource) and source.path is not None:
                source.path = str((base_dir / source.path).resolve())
    for source in config.connect.sources:
        if isinstance(source, FolderSource) and source.name is None:
            source.name = Path(source.path).name or "folder"
    if config.normalize.overlap_chars >= config.normalize.max_chars:
        raise ConfigInvalid(
            "pipeline config: normalize.overlap_chars must be smaller than normalize.max_chars",
            suggestion="Lower overlap_chars or raise max_chars",
        )
    return config


def load_pipeline_config(path: Path, glob: GlobalConfig | None = None) -> PipelineConfig:
    """Load a YAML/JSON pipeline config file; relative paths are relative to the file."""
    return parse_pipeline_config(read_config_file(path), base_dir=path.resolve().parent, glob=glob)


def pipeline_config_schema() -> dict[str, Any]:
    """JSON Schema of the pipeline config file, for editor validation."""
    schema: dict[str, Any] = PipelineConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "IndexFoundry pipeline config"
    return schema
