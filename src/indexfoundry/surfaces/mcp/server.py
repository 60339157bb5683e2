"""The IndexFoundry MCP server: the pipeline tools, the retrieval tools, pages as resources.

``create_server(options)`` builds an ``MCPServer`` (official SDK, v2). Pipeline tools are read
from the tool registry when the server is created, each with the *agent's* input model
(``api.agent_tool_specs``): an agent names the operator's connections (``--connections``)
and paths inside the roots (``--root``), never a destination or a secret.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio.to_thread
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import Resource as MCPResource

from indexfoundry import __version__, api
from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.surfaces.mcp.adapter import Exposed, Runner, from_spec
from indexfoundry.surfaces.mcp.freshness import DEFAULT_PER_MINUTE, DEFAULT_REUSE_S, FreshnessGate
from indexfoundry.surfaces.mcp.library_tools import LibraryTools
from indexfoundry.surfaces.mcp.retrieval import FixedRuns, RetrievalTools, RunSource
from indexfoundry.surfaces.mcp.schemas import SCHEMA_URI_PREFIX, compact_schema
from indexfoundry.surfaces.mcp.security import check_run_id, tokens_equal

if TYPE_CHECKING:
    from indexfoundry.api import Connections, DocsIndex, LibraryEntry, LibraryRegistry, Roots, RunPool
    from indexfoundry.surfaces.mcp.metrics import ToolMetrics

log = logging.getLogger("indexfoundry.mcp")

ToolSet = Literal["docs", "all"]
TOOL_SETS: tuple[ToolSet, ...] = ("docs", "all")

PAGE_URI_PREFIX = "indexfoundry://pages/"
PAGE_URI_TEMPLATE = PAGE_URI_PREFIX + "{+path}"
MAX_LISTED_PAGES = 1000

INSTRUCTIONS = (
    "IndexFoundry builds and searches vector indexes of documents. To answer from the indexed "
    "documentation: search_docs, then get_page or get_section for more context (list_pages lists "
    "the pages). The indexfoundry_* tools run the deterministic pipeline: connect → extract → "
    "normalize → index → serve (indexfoundry_pipeline_run runs all of them). Errors carry a code "
    "(error.code) and a suggestion."
)
DOCS_INSTRUCTIONS = (
    "Searches indexed documentation: search_docs, then get_page or get_section for more context; "
    "list_pages lists the pages. Errors carry a code (error.code) and a suggestion."
)

LIBRARY_INSTRUCTIONS = (
    "Serves the docs of several libraries and versions: list_libraries, then search_docs (with a "
    "library and version, or across all), get_page / get_section for context. Errors carry a code."
)


@dataclass
class ServerOptions:
    """How to build the server."""

    runs_dir: Path
    run_id: str | None = None
    docs: Path | None = None
    embedding_model: str = "local"
    roots: list[Path] = field(default_factory=list)
    # The operator's connections file: what agents may name (None: no connections).
    connections: Connections | None = None
    # Private networks agents' fetches may reach (--allow-private-networks, --allow-private-host).
    allow_private_networks: bool = False
    allowed_private_hosts: list[str] = field(default_factory=list)
    # check_freshness: a source's check is reused for this long; at most this many checks a minute.
    freshness_reuse_s: float = DEFAULT_REUSE_S
    freshness_per_minute: int = DEFAULT_PER_MINUTE
    # In-process hook (tests, library use): an embedder instance for indexing and search.
    embedder: Any = None
    watch: bool = True
    progress: Any = None
    # Multi-library mode: NAME@VERSION targets (flags) and/or a libraries.yaml (re-read on change).
    libraries: list[LibraryEntry] = field(default_factory=list)
    libraries_file: Path | None = None
    # Seconds between refreshes of libraries built from remote sources (0: never).
    refresh_interval_s: float = 3600.0
    # Tool set: "docs" (search_docs, get_page, get_section, list_pages) or "all" (plus every
    # pipeline tool). Default: "docs" in docs mode, else "all".
    tools: ToolSet | None = None

    def tool_set(self) -> ToolSet:
        return self.tools or ("docs" if self.docs is not None else "all")


class IndexFoundryMCP(MCPServer[Any]):
    """``MCPServer`` whose resource list names the current run's pages (it changes with the run)."""

    retrieval: RetrievalTools

    async def list_resources(self) -> list[MCPResource]:
        listed = await super().list_resources()
        try:
            pages = await anyio.to_thread.run_sync(self.retrieval.page_list, MAX_LISTED_PAGES)
        except IndexFoundryError as error:
            log.info("no pages to list: %s", error.one_line())
            return listed
        for path, title, fmt in pages:
            listed.append(
                MCPResource(
                    uri=PAGE_URI_PREFIX + path,
                    name=path,
                    title=title,
                    description=f"Page '{path}' as extracted ({fmt})",
                    mime_type="text/markdown" if fmt == "markdown" else "text/plain",
                )
            )
        return listed


def _roots(options: ServerOptions) -> Roots:
    if options.roots:
        return api.Roots(options.roots)
    if options.docs is not None:
        return api.Roots([options.docs])
    return api.Roots([Path.cwd()])


def _scope(options: ServerOptions) -> api.AgentScope:
    return api.AgentScope(
        roots=_roots(options),
        connections=options.connections if options.connections is not None else api.Connections(),
        allow_private_networks=options.allow_private_networks,
        allowed_private_hosts=tuple(options.allowed_private_hosts),
    )


@dataclass
class _Backing:
    """What the retrieval tools read: the server's runs, a docs folder's index or many libraries."""

    runs: RunPool
    source: RunSource
    docs: DocsIndex | None = None
    registry: LibraryRegistry | None = None


def _backing(options: ServerOptions) -> _Backing:
    """One fixed run (or the newest), a docs folder kept fresh, or a registry of libraries."""
    runs_dir = options.runs_dir
    if options.libraries or options.libraries_file is not None:
        if options.docs is not None:
            raise ConfigInvalid("--docs and --library cannot be combined", suggestion="Serve the folder as a library")
        registry = api.library_registry(
            runs_dir,
            options.libraries,
            options.libraries_file,
            embedding_model=options.embedding_model,
            embedder=options.embedder,
            refresh_interval_s=options.refresh_interval_s,
        )
        runs = api.RunPool(runs_dir, embedder=options.embedder, size=64)
        return _Backing(runs, FixedRuns(runs_dir, options.run_id), registry=registry)
    runs = api.RunPool(runs_dir, embedder=options.embedder)
    if options.docs is not None:
        docs = api.docs_index(
            options.docs,
            runs_dir,
            embedding_model=options.embedding_model,
            embedder=options.embedder,
            progress=options.progress,
        )
        return _Backing(runs, docs, docs=docs)
    return _Backing(runs, FixedRuns(runs_dir, options.run_id))


def _exposed(options: ServerOptions, backing: _Backing, retrieval: RetrievalTools) -> list[Exposed]:
    """The tools the server lists: the library tools, or the retrieval tools (and the pipeline's)."""
    if backing.registry is not None:
        # A docs server for agents: only the library tools (the listing stays small).
        return LibraryTools(backing.registry, retrieval).exposed()
    exposed = retrieval.exposed()
    if options.tool_set() == "all":
        context: dict[str, Any] = {"runs_dir": options.runs_dir}
        if options.embedder is not None:
            context["embedder"] = options.embedder
        exposed.extend(from_spec(spec, context) for spec in api.agent_tool_specs(_scope(options)).values())
    return exposed


def _instructions(options: ServerOptions, backing: _Backing) -> str:
    if backing.registry is not None:
        return LIBRARY_INSTRUCTIONS
    return INSTRUCTIONS if options.tool_set() == "all" else DOCS_INSTRUCTIONS


def _lifespan(
    options: ServerOptions, backing: _Backing
) -> Callable[[MCPServer[Any]], AbstractAsyncContextManager[dict[str, Any]]]:
    """Start the first build (and the watcher or refresher) with the server; stop them after it."""
    registry, docs, runs = backing.registry, backing.docs, backing.runs

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        # Entered once per process (stdio, or the HTTP session manager), after stdio has
        # claimed stdout. The first build runs in the background so the client's initialize
        # is answered at once; search_docs answers meanwhile from what it has indexed so far
        # (DocsIndex.first_build), the other tools wait for it (the index lock).
        if registry is not None:
            threading.Thread(
                target=_build_libraries, args=(registry,), name="indexfoundry-libraries-build", daemon=True
            ).start()
            if options.watch:
                registry.start_refreshing()
        if docs is not None:
            docs.start_build()
            if options.watch:
                docs.start_watching()
        try:
            yield {}
        finally:
            if docs is not None:
                await anyio.to_thread.run_sync(docs.stop)
            if registry is not None:
                await anyio.to_thread.run_sync(registry.stop)
            await anyio.to_thread.run_sync(runs.close)

    return lifespan


def _add_resources(server: IndexFoundryMCP, retrieval: RetrievalTools, exposed: list[Exposed]) -> None:
    """Pages of the server's run, and each tool's full input schema, as resources."""

    @server.resource(
        PAGE_URI_TEMPLATE,
        name="page",
        title="Indexed page",
        description="A page (document) of the server's run, as extracted",
        mime_type="text/markdown",
    )
    def read_page(path: str) -> str:
        try:
            return retrieval.page_text(path)
        except IndexFoundryError as error:
            raise ResourceError(error.one_line()) from None

    schemas = {tool.name: tool.input_model for tool in exposed}

    @server.resource(
        SCHEMA_URI_PREFIX + "{name}",
        name="tool-input-schema",
        title="Full input schema of a tool",
        description="The complete JSON Schema of a tool's arguments (tools/list shows large ones summarised)",
        mime_type="application/schema+json",
    )
    def read_schema(name: str) -> str:
        model = schemas.get(name)
        if model is None:
            raise ResourceError(f"NOT_FOUND: no tool named '{name}' — tools/list names the tools")
        return json.dumps(compact_schema(model.model_json_schema()), ensure_ascii=False)


def create_server(
    options: ServerOptions,
    *,
    bearer_token: str | None = None,
    public_url: str = "http://127.0.0.1",
    metrics: Callable[[RunSource], ToolMetrics] | None = None,
) -> tuple[IndexFoundryMCP, RunSource]:
    """Build the MCP server and the run source its retrieval tools read from.

    ``metrics`` makes the tool metrics for the run source (the Streamable HTTP transport's
    ``/metrics``); every tool call is then counted and timed.

    With ``bearer_token`` the Streamable HTTP transport requires ``Authorization: Bearer
    <token>`` (the SDK's bearer middleware, with a constant-time static token check).
    """
    if options.run_id is not None:
        check_run_id(options.run_id, "--run-id", allow_latest=True)
    backing = _backing(options)
    freshness = FreshnessGate(options.freshness_reuse_s, options.freshness_per_minute)
    retrieval = RetrievalTools(
        backing.source,
        backing.runs,
        flag_changed=backing.docs is not None,
        freshness=freshness,
        relative_paths=backing.docs is not None or backing.registry is not None,
    )
    exposed = _exposed(options, backing, retrieval)
    runner = Runner(metrics(backing.source) if metrics is not None else None)
    server = IndexFoundryMCP(
        name="indexfoundry",
        title="IndexFoundry",
        version=__version__,
        instructions=_instructions(options, backing),
        tools=[runner.sdk_tool(tool) for tool in exposed],
        lifespan=_lifespan(options, backing),
        token_verifier=StaticTokenVerifier(bearer_token) if bearer_token else None,
        auth=AuthSettings(issuer_url=public_url, resource_server_url=None) if bearer_token else None,
    )
    server.retrieval = retrieval
    _add_resources(server, retrieval, exposed)
    return server, backing.source


class StaticTokenVerifier:
    """Accepts exactly one bearer token (from an environment variable), compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if tokens_equal(token, self._token):
            return AccessToken(token="static", client_id="indexfoundry-token", scopes=[])
        return None


def _build_libraries(registry: LibraryRegistry) -> None:
    """Build (or find) every library's run at start, so the first query does not wait."""
    for library in registry.libraries():
        try:
            log.info("serving %s from run %s", library.label, library.run_id())
        except IndexFoundryError as error:
            log.error("library %s is not available: %s", library.label, error.one_line())
