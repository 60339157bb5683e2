"""``indexfoundry mcp``: serve IndexFoundry to AI agents over MCP (stdio or Streamable HTTP)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.surfaces.cli.options import RunsDir


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        runs_dir: Path | None = RunsDir,
        docs: Path | None = typer.Option(
            None,
            "--docs",
            help="Docs mode: index this folder (first start), keep it fresh while serving, search it.",
            show_default=False,
        ),
        run_id: str | None = typer.Option(
            None, "--run-id", help="Run the retrieval tools read by default (default: the newest completed run)."
        ),
        embedding_model: str = typer.Option(
            "local",
            "--embedding-model",
            envvar="INDEXFOUNDRY_EMBEDDING_MODEL",
            help="Docs mode: embedding model ('local' offline MiniLM, 'hash' for tests).",
        ),
        roots: list[Path] = typer.Option(
            [],
            "--root",
            help="Folder agents may ingest from (repeatable; default: the docs folder, else the working directory).",
        ),
        http: bool = typer.Option(False, "--http", help="Serve Streamable HTTP instead of stdio."),
        host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address."),
        port: int = typer.Option(8765, "--port", min=1, max=65535, help="HTTP port."),
        token_env: str | None = typer.Option(
            None, "--token-env", help="HTTP: require 'Authorization: Bearer <token>' with the token from this env var."
        ),
        allow_origins: list[str] = typer.Option(
            [],
            "--allow-origin",
            help="HTTP: extra Origin allowed (besides loopback), e.g. https://app.example (repeatable).",
        ),
        allow_hosts: list[str] = typer.Option(
            [], "--allow-host", help="HTTP: extra Host header allowed, e.g. docs.internal:8765 (repeatable)."
        ),
        watch: bool = typer.Option(
            True,
            "--watch/--no-watch",
            help="Docs mode: watch the folder for changes; library mode: refresh remote libraries.",
        ),
        tools: str | None = typer.Option(
            None,
            "--tools",
            help="Tool set: 'docs' (search_docs, get_page, get_section, list_pages) or 'all' (plus every "
            "pipeline tool). Default: docs with --docs, else all.",
            show_default=False,
        ),
        connections: Path | None = typer.Option(
            None,
            "--connections",
            envvar="INDEXFOUNDRY_CONNECTIONS",
            help="Connections file (YAML/JSON): the embedding APIs, stores, rerankers and fetch credentials "
            "agents may name (index.connection: NAME ...); agents write no URL, host, DSN or env var themselves.",
            show_default=False,
        ),
        allow_private_hosts: list[str] = typer.Option(
            [],
            "--allow-private-host",
            help="Private or loopback HOST[:PORT] agents' runs may fetch from (repeatable; default: none).",
        ),
        allow_private_networks: bool = typer.Option(
            False, "--allow-private-networks", help="Let agents' runs fetch any private or loopback address."
        ),
        freshness_reuse: float = typer.Option(
            300.0, "--freshness-reuse", min=0, help="check_freshness reuses a source's check for this many seconds."
        ),
        freshness_rate: int = typer.Option(
            120,
            "--freshness-rate",
            min=0,
            help="check_freshness checks at most this many sources a minute (0: no limit).",
        ),
        retired: list[str] = typer.Option(
            [], "--allow-env", "--allow-endpoint", "--allow-bind-host", hidden=True, help="Replaced by --connections."
        ),
        libraries: list[str] = typer.Option(
            [],
            "--library",
            help="Serve a library version: NAME@VERSION=RUN_ID|CONFIG|FOLDER (repeatable; only library tools).",
        ),
        libraries_file: Path | None = typer.Option(
            None, "--libraries", help="libraries.yaml of library versions to serve (re-read when it changes)."
        ),
        refresh_interval: float = typer.Option(
            3600.0,
            "--refresh-interval",
            min=0,
            help="Seconds between refreshes of libraries with remote sources (url, sitemap, crawl, llms_txt, "
            "repo): a --base run with conditional requests; 0 never refreshes.",
        ),
    ) -> None:
        """Serve search_docs/get_page/get_section/list_pages (and, with --tools all or without --docs, every
        pipeline tool) to MCP clients."""
        from indexfoundry.surfaces.mcp.server import TOOL_SETS, ServerOptions
        from indexfoundry.surfaces.mcp.transports import serve_http, serve_stdio

        if tools is not None and tools not in TOOL_SETS:
            raise ConfigInvalid(f"--tools {tools}: unknown tool set", suggestion="Use --tools docs or --tools all")
        folder: Path | None = None
        if docs is not None:
            folder = docs.expanduser().resolve()
            if not folder.is_dir():
                raise ConfigInvalid(f"--docs {docs} is not a folder", suggestion="Pass the folder of your docs")
            root = api.docs_runs_dir(runs_dir).expanduser().resolve()
        else:
            root = api.runs_dir_for(runs_dir).expanduser().resolve()
        token: str | None = None
        if token_env is not None:
            token = os.environ.get(token_env) or None
            if token is None:
                raise ConfigInvalid(
                    f"--token-env {token_env}: the environment variable is not set or empty",
                    suggestion=f"export {token_env}=<a long random token>",
                )
            if not http:
                raise ConfigInvalid("--token-env only applies to --http", suggestion="Add --http, or drop --token-env")
        from indexfoundry.models.config import load_global_config

        if retired:
            raise ConfigInvalid(
                "--allow-env, --allow-endpoint and --allow-bind-host are gone: agents no longer write endpoints, "
                "env var names or bind hosts",
                suggestion="Name each embedding API, store, reranker and credential in a connections file "
                "(indexfoundry mcp --connections FILE); agents refer to them by name (docs/mcp.md)",
            )
        named = api.load_connections(connections.expanduser()) if connections is not None else None
        options = ServerOptions(
            libraries=[api.parse_library_flag(value) for value in libraries],
            libraries_file=libraries_file.expanduser().resolve() if libraries_file is not None else None,
            refresh_interval_s=refresh_interval,
            runs_dir=root,
            run_id=run_id,
            docs=folder,
            embedding_model=embedding_model,
            roots=[r.expanduser().resolve() for r in roots],
            watch=watch,
            connections=named,
            allow_private_networks=allow_private_networks or load_global_config().security.allow_private_networks,
            allowed_private_hosts=list(allow_private_hosts),
            freshness_reuse_s=freshness_reuse,
            freshness_per_minute=freshness_rate,
            tools=tools,
        )
        if folder is not None:
            from indexfoundry.surfaces.mcp.progress import StderrProgress

            options.progress = StderrProgress()
        if http:
            if host not in ("127.0.0.1", "localhost", "::1") and token is None:
                typer.echo(
                    f"indexfoundry: warning: serving on {host} without --token-env: "
                    "anyone who can reach it can call tools",
                    err=True,
                )
            serve_http(
                options,
                host=host,
                port=port,
                token=token,
                allowed_origins=allow_origins,
                allowed_hosts=allow_hosts,
            )
        else:
            serve_stdio(options)
