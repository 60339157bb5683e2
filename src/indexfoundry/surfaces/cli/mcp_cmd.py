"""``indexfoundry mcp``: serve IndexFoundry to AI agents over MCP (stdio or Streamable HTTP)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.surfaces.cli.options import RunsDir

if TYPE_CHECKING:
    from indexfoundry.surfaces.mcp.server import ServerOptions


# The command's options, in the order --help lists them.
DocsOption = typer.Option(
    None,
    "--docs",
    help="Docs mode: index this folder (first start), keep it fresh while serving, search it.",
    show_default=False,
)
RunIdOption = typer.Option(
    None,
    "--run-id",
    help="Run the retrieval tools read by default (default: the newest completed run; "
    "'latest:PIPELINE' in a runs folder of several pipelines).",
)
EmbeddingModelOption = typer.Option(
    "local",
    "--embedding-model",
    envvar="INDEXFOUNDRY_EMBEDDING_MODEL",
    help="Docs mode: embedding model ('local' offline MiniLM, 'hash' for tests).",
)
RootsOption = typer.Option(
    [],
    "--root",
    help="Folder agents may ingest from (repeatable; default: the docs folder, else the working directory).",
)
HttpOption = typer.Option(False, "--http", help="Serve Streamable HTTP instead of stdio.")
HostOption = typer.Option("127.0.0.1", "--host", help="HTTP bind address.")
PortOption = typer.Option(8765, "--port", min=1, max=65535, help="HTTP port.")
TokenEnvOption = typer.Option(
    None, "--token-env", help="HTTP: require 'Authorization: Bearer <token>' with the token from this env var."
)
AllowOriginsOption = typer.Option(
    [],
    "--allow-origin",
    help="HTTP: extra Origin allowed (besides loopback), e.g. https://app.example (repeatable).",
)
AllowHostsOption = typer.Option(
    [], "--allow-host", help="HTTP: extra Host header allowed, e.g. docs.internal:8765 (repeatable)."
)
WatchOption = typer.Option(
    True,
    "--watch/--no-watch",
    help="Docs mode: watch the folder for changes; library mode: refresh remote libraries.",
)
ToolsOption = typer.Option(
    None,
    "--tools",
    help="Tool set: 'docs' (search_docs, get_page, get_section, list_pages) or 'all' (plus every "
    "pipeline tool). Default: docs with --docs, else all.",
    show_default=False,
)
ConnectionsOption = typer.Option(
    None,
    "--connections",
    envvar="INDEXFOUNDRY_CONNECTIONS",
    help="Connections file (YAML/JSON): the embedding APIs, stores, rerankers and fetch credentials "
    "agents may name (index.connection: NAME ...); agents write no URL, host, DSN or env var themselves.",
    show_default=False,
)
AllowPrivateHostsOption = typer.Option(
    [],
    "--allow-private-host",
    help="Private or loopback HOST[:PORT] agents' runs may fetch from (repeatable; default: none).",
)
AllowPrivateNetworksOption = typer.Option(
    False, "--allow-private-networks", help="Let agents' runs fetch any private or loopback address."
)
FreshnessReuseOption = typer.Option(
    300.0, "--freshness-reuse", min=0, help="check_freshness reuses a source's check for this many seconds."
)
FreshnessRateOption = typer.Option(
    120,
    "--freshness-rate",
    min=0,
    help="check_freshness checks at most this many sources a minute (0: no limit).",
)
RetiredOption = typer.Option(
    [], "--allow-env", "--allow-endpoint", "--allow-bind-host", hidden=True, help="Replaced by --connections."
)
LibrariesOption = typer.Option(
    [],
    "--library",
    help="Serve a library version: NAME@VERSION=RUN_ID|CONFIG|FOLDER (repeatable; only library tools).",
)
LibrariesFileOption = typer.Option(
    None, "--libraries", help="libraries.yaml of library versions to serve (re-read when it changes)."
)
RefreshIntervalOption = typer.Option(
    3600.0,
    "--refresh-interval",
    min=0,
    help="Seconds between refreshes of libraries with remote sources (url, sitemap, crawl, llms_txt, "
    "repo): a --base run with conditional requests; 0 never refreshes.",
)


@dataclass(frozen=True)
class McpCommand:
    """What ``indexfoundry mcp`` was asked for, as parsed from its options."""

    runs_dir: Path | None
    docs: Path | None
    run_id: str | None
    embedding_model: str
    roots: list[Path]
    http: bool
    host: str
    port: int
    token_env: str | None
    allow_origins: list[str]
    allow_hosts: list[str]
    watch: bool
    tools: str | None
    connections: Path | None
    allow_private_hosts: list[str]
    allow_private_networks: bool
    freshness_reuse: float
    freshness_rate: int
    retired: list[str]
    libraries: list[str]
    libraries_file: Path | None
    refresh_interval: float


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        runs_dir: Path | None = RunsDir,
        docs: Path | None = DocsOption,
        run_id: str | None = RunIdOption,
        embedding_model: str = EmbeddingModelOption,
        roots: list[Path] = RootsOption,
        http: bool = HttpOption,
        host: str = HostOption,
        port: int = PortOption,
        token_env: str | None = TokenEnvOption,
        allow_origins: list[str] = AllowOriginsOption,
        allow_hosts: list[str] = AllowHostsOption,
        watch: bool = WatchOption,
        tools: str | None = ToolsOption,
        connections: Path | None = ConnectionsOption,
        allow_private_hosts: list[str] = AllowPrivateHostsOption,
        allow_private_networks: bool = AllowPrivateNetworksOption,
        freshness_reuse: float = FreshnessReuseOption,
        freshness_rate: int = FreshnessRateOption,
        retired: list[str] = RetiredOption,
        libraries: list[str] = LibrariesOption,
        libraries_file: Path | None = LibrariesFileOption,
        refresh_interval: float = RefreshIntervalOption,
    ) -> None:
        """Serve search_docs/get_page/get_section/list_pages (and, with --tools all or without --docs, every
        pipeline tool) to MCP clients."""
        serve(
            McpCommand(
                runs_dir=runs_dir,
                docs=docs,
                run_id=run_id,
                embedding_model=embedding_model,
                roots=roots,
                http=http,
                host=host,
                port=port,
                token_env=token_env,
                allow_origins=allow_origins,
                allow_hosts=allow_hosts,
                watch=watch,
                tools=tools,
                connections=connections,
                allow_private_hosts=allow_private_hosts,
                allow_private_networks=allow_private_networks,
                freshness_reuse=freshness_reuse,
                freshness_rate=freshness_rate,
                retired=retired,
                libraries=libraries,
                libraries_file=libraries_file,
                refresh_interval=refresh_interval,
            )
        )


def serve(cmd: McpCommand) -> None:
    """Check the options, build the server's options and serve over stdio or Streamable HTTP."""
    from indexfoundry.surfaces.mcp.transports import serve_http, serve_stdio

    options, token = server_options(cmd)
    if cmd.http:
        if cmd.host not in ("127.0.0.1", "localhost", "::1") and token is None:
            typer.echo(
                f"indexfoundry: warning: serving on {cmd.host} without --token-env: "
                "anyone who can reach it can call tools",
                err=True,
            )
        serve_http(
            options,
            host=cmd.host,
            port=cmd.port,
            token=token,
            allowed_origins=cmd.allow_origins,
            allowed_hosts=cmd.allow_hosts,
        )
    else:
        serve_stdio(options)


def server_options(cmd: McpCommand) -> tuple[ServerOptions, str | None]:
    """The MCP server's options and the HTTP bearer token; CONFIG_INVALID for options that do not fit."""
    from indexfoundry.models.config import load_global_config
    from indexfoundry.surfaces.mcp.server import TOOL_SETS, ServerOptions

    if cmd.tools is not None and cmd.tools not in TOOL_SETS:
        raise ConfigInvalid(f"--tools {cmd.tools}: unknown tool set", suggestion="Use --tools docs or --tools all")
    folder, root = _folders(cmd)
    token = _token(cmd)
    if cmd.retired:
        raise ConfigInvalid(
            "--allow-env, --allow-endpoint and --allow-bind-host are gone: agents no longer write endpoints, "
            "env var names or bind hosts",
            suggestion="Name each embedding API, store, reranker and credential in a connections file "
            "(indexfoundry mcp --connections FILE); agents refer to them by name (docs/mcp.md)",
        )
    named = api.load_connections(cmd.connections.expanduser()) if cmd.connections is not None else None
    options = ServerOptions(
        libraries=[api.parse_library_flag(value) for value in cmd.libraries],
        libraries_file=cmd.libraries_file.expanduser().resolve() if cmd.libraries_file is not None else None,
        refresh_interval_s=cmd.refresh_interval,
        runs_dir=root,
        run_id=cmd.run_id,
        docs=folder,
        embedding_model=cmd.embedding_model,
        roots=[r.expanduser().resolve() for r in cmd.roots],
        watch=cmd.watch,
        connections=named,
        allow_private_networks=cmd.allow_private_networks or load_global_config().security.allow_private_networks,
        allowed_private_hosts=list(cmd.allow_private_hosts),
        freshness_reuse_s=cmd.freshness_reuse,
        freshness_per_minute=cmd.freshness_rate,
        tools=cmd.tools,
    )
    if folder is not None:
        from indexfoundry.surfaces.mcp.progress import StderrProgress

        options.progress = StderrProgress()
    return options, token


def _folders(cmd: McpCommand) -> tuple[Path | None, Path]:
    """The docs folder (docs mode) and the runs folder the server reads."""
    if cmd.docs is None:
        return None, api.runs_dir_for(cmd.runs_dir).expanduser().resolve()
    folder = cmd.docs.expanduser().resolve()
    if not folder.is_dir():
        raise ConfigInvalid(f"--docs {cmd.docs} is not a folder", suggestion="Pass the folder of your docs")
    return folder, api.docs_runs_dir(cmd.runs_dir).expanduser().resolve()


def _token(cmd: McpCommand) -> str | None:
    """The bearer token --token-env names (HTTP only), or None without --token-env."""
    if cmd.token_env is None:
        return None
    token = os.environ.get(cmd.token_env) or None
    if token is None:
        raise ConfigInvalid(
            f"--token-env {cmd.token_env}: the environment variable is not set or empty",
            suggestion=f"export {cmd.token_env}=<a long random token>",
        )
    if not cmd.http:
        raise ConfigInvalid("--token-env only applies to --http", suggestion="Add --http, or drop --token-env")
    return token
