"""Models of the serve phase: the serve tools' inputs and outputs, and the HTTP API's
read-only views (documents, stats, health). Search requests and responses live in
``models/retrieval.py`` and are shared with the CLI and MCP."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.config import ApiInfo, ServeEndpoint
from indexfoundry.models.ids import RunIdOrLatest
from indexfoundry.models.retrieval import AllowedFilter, SearchMode, SearchResult


# ---------------------------------------------------------------- tools
class ServeOpenapiInput(Strict):
    """Input of ``indexfoundry_serve_openapi``."""

    run_id: RunIdOrLatest = Field(description="Run whose served/openapi.json is written")
    api_info: ApiInfo | None = Field(
        default=None, description="Title, version, description, base_path (default: the run's serve.api_info)"
    )
    endpoints: list[ServeEndpoint] | None = Field(
        default=None, description="Endpoints in the spec (default: those the run's config serves, all by default)"
    )
    include_schemas: bool = Field(default=True, description="Include the request/response JSON Schemas")


class ServeOpenapiOutput(Strict):
    success: bool = Field(description="The spec was written")
    run_id: str = Field(description="Run the spec was written for")
    path: str = Field(description="Path of served/openapi.json")
    sha256: str = Field(description="SHA-256 of the written spec")
    openapi_version: str = Field(description="OpenAPI version of the spec")
    paths: list[str] = Field(description="Paths the spec describes")


class RateLimitInput(Strict):
    requests_per_minute: int = Field(default=60, ge=1, le=1_000_000, description="Sustained requests per minute")
    burst: int = Field(default=10, ge=1, le=100_000, description="Requests a client may make at once")


class ServeStartInput(Strict):
    """Input of ``indexfoundry_serve_start``; starts the server in the background."""

    run_id: RunIdOrLatest = Field(description="Run to serve, or 'latest' (follows new runs)")
    host: str = Field(default="127.0.0.1", description="Bind address")
    port: int = Field(default=8080, ge=1024, le=65535, description="Port")
    cors_origins: list[str] | None = Field(default=None, description="CORS origins (default: the run's config)")
    rate_limit: RateLimitInput | None = Field(default=None, description="Per-client rate limit")
    log_requests: bool = Field(default=True, description="Log requests to the run's logs/requests.ndjson")


class ServerInfo(Strict):
    """A running HTTP server, as recorded in its pid file under ``<runs>/.servers/``."""

    pid: int = Field(description="Server process id")
    host: str = Field(description="Bind address")
    port: int = Field(description="Port")
    url: str = Field(description="Base URL of the web page; the API is under url + base_path")
    base_path: str = Field(description="API path prefix")
    run_spec: str = Field(description="Run id served, or 'latest'")
    started_at: str = Field(description="When the server started (ISO 8601)")
    log_file: str | None = Field(default=None, description="stdout/stderr of a background server")


class ServerStatus(ServerInfo):
    alive: bool = Field(description="The process is running")
    healthy: bool = Field(description="GET /health answered")
    serving_run_id: str | None = Field(default=None, description="Run currently served (from /health)")


class ServeStartOutput(Strict):
    success: bool = Field(description="The server is up")
    already_running: bool = Field(default=False, description="A server for this run was already on the port")
    server: ServerInfo = Field(description="The server")
    retrieval_endpoint: str = Field(description="Base URL of the search API")


class ServeStopOutput(Strict):
    stopped: list[ServerInfo] = Field(description="Servers stopped")


# ---------------------------------------------------------------- HTTP views
class ChunkRef(Strict):
    """A chunk of a document, without its text (GET /chunks/{chunk_id} has the text)."""

    chunk_id: str = Field(description="Chunk id")
    chunk_index: int = Field(description="Index within the document")
    byte_start: int = Field(description="Start offset in the extracted text")
    byte_end: int = Field(description="End offset in the extracted text")
    page: int | None = Field(default=None, description="Page, for paged documents")
    heading_path: str | None = Field(default=None, description="Breadcrumb")


class DocumentView(Strict):
    """GET /documents/{doc_id}: one indexed document and its chunks."""

    doc_id: str = Field(description="Document id")
    uri: str = Field(description="Where the document came from")
    format: str = Field(description="Document format")
    content_type: str = Field(description="MIME type")
    title: str | None = Field(default=None, description="Title")
    char_count: int | None = Field(default=None, description="Characters in the extracted text")
    page_count: int | None = Field(default=None, description="Pages, for paged documents")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Front matter and format metadata")
    chunks: list[ChunkRef] = Field(description="The document's chunks, in order")
    text: str | None = Field(default=None, description="Extracted text (with ?include_text=true)")
    run_id: str = Field(description="Run the document belongs to")


class StatsView(Strict):
    """GET /stats: what is served."""

    run_id: str = Field(description="Run served")
    run_status: str = Field(description="Status of the served run")
    indexed_at: str | None = Field(default=None, description="When its index phase completed")
    documents: int = Field(description="Documents with at least one chunk")
    chunks: int = Field(description="Chunks searchable")
    vectors: int | None = Field(default=None, description="Vectors in the store")
    model: str = Field(description="Embedding model id")
    dimensions: int | None = Field(default=None, description="Vector dimensions")
    collection: str | None = Field(default=None, description="Vector store collection")
    namespace: str | None = Field(default=None, description="Namespace within the collection")
    search_modes: list[SearchMode] = Field(description="Search modes offered")
    default_top_k: int = Field(description="Default number of results")
    allowed_filters: list[AllowedFilter] = Field(description="Filterable fields and their operators")
    follows_latest: bool = Field(description="The server switches to newer completed runs")
    reloads: int = Field(description="Runs loaded since the server started")


class HealthView(Strict):
    """GET /health."""

    status: Literal["ok", "waiting"] = Field(description="'waiting': no completed run to serve yet")
    run_id: str | None = Field(default=None, description="Run served")
    version: str = Field(description="IndexFoundry version")
    auth_required: bool = Field(description="Search endpoints need an API key")


# ---------------------------------------------------------------- many libraries (HTTP API)
class LibraryVersionView(Strict):
    name: str = Field(description="Library name")
    version: str = Field(description="Version")
    latest: bool = Field(description="The newest version of the library")
    run_id: str = Field(description="Run serving it")
    indexed_at: str | None = Field(default=None, description="When that run was indexed")
    checked_at: str | None = Field(default=None, description="When its remote sources were last checked")
    pages: int = Field(description="Pages (documents)")


class LibrariesView(Strict):
    """``GET /libraries``: every library version served."""

    libraries: list[LibraryVersionView] = Field(description="Library versions, by name, newest first")


class LibrarySearched(Strict):
    library: str = Field(description="Library")
    version: str = Field(description="Version searched")
    run_id: str = Field(description="Run searched")
    indexed_at: str | None = Field(default=None, description="When it was indexed")


class LibrarySearchHit(Strict):
    library: str = Field(description="Library of the result")
    version: str = Field(description="Version of the library")
    path: str = Field(description="Page path, relative to the library's folder or source root (same in every version)")
    result: SearchResult = Field(description="The result")


class LibrarySearchView(Strict):
    """``POST /libraries/search``: results of one library, or of all, each labelled."""

    query: str = Field(description="The query")
    searched: list[LibrarySearched] = Field(description="Library versions searched")
    results: list[LibrarySearchHit] = Field(description="Results, best first (merged by score across libraries)")


class LibraryPageView(Strict):
    """``GET /libraries/{name}/page``: one page of a library version."""

    library: str = Field(description="Library")
    version: str = Field(description="Version")
    run_id: str = Field(description="Run read")
    path: str = Field(description="Page path, relative to the library's folder or source root")
    title: str | None = Field(default=None, description="Page title")
    text: str = Field(description="The page's extracted text")


class LibrarySectionView(Strict):
    """``GET /libraries/{name}/section``: one section of a page."""

    library: str = Field(description="Library")
    version: str = Field(description="Version")
    run_id: str = Field(description="Run read")
    path: str = Field(description="Page path")
    breadcrumb: str = Field(description="The section's heading breadcrumb")
    text: str = Field(description="The section's text")
    other_matches: list[str] = Field(default_factory=list, description="Other headings the query matched")


class LibraryPageItem(Strict):
    path: str = Field(description="Page path")
    title: str | None = Field(default=None, description="Page title")


class LibraryPagesView(Strict):
    """``GET /libraries/{name}/pages``: the pages of a library version."""

    library: str = Field(description="Library")
    version: str = Field(description="Version")
    run_id: str = Field(description="Run read")
    total: int = Field(description="Pages matching the prefix")
    pages: list[LibraryPageItem] = Field(description="Pages, sorted by path")
