"""``indexfoundry serve``: rerun the phase, and the HTTP API commands (start, status, stop, openapi)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.ids import LATEST
from indexfoundry.surfaces.cli.options import Json, RunsDir
from indexfoundry.surfaces.cli.output import print_json
from indexfoundry.surfaces.cli.phase_group import phase_group

if TYPE_CHECKING:
    from indexfoundry.models.config import RateLimitConfig

app = phase_group("serve", "Serve phase: retrieval profile, OpenAPI spec, HTTP server.")


def _rate_limit(rpm: int | None, burst: int | None, off: bool) -> RateLimitConfig | None:
    from indexfoundry.models.config import RateLimitConfig

    if off:
        return RateLimitConfig(enabled=False)
    if rpm is None and burst is None:
        return None
    defaults = RateLimitConfig()
    return RateLimitConfig(
        requests_per_minute=rpm if rpm is not None else defaults.requests_per_minute,
        burst=burst if burst is not None else defaults.burst,
    )


@app.command("start")
def start(
    run_id: str = typer.Option(
        LATEST,
        "--run-id",
        help="Run to serve; 'latest' (or 'latest:PIPELINE' in a runs folder of several pipelines) "
        "follows each new completed run of that pipeline.",
    ),
    runs_dir: Path | None = RunsDir,
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (127.0.0.1: this machine only)."),
    port: int = typer.Option(8080, "--port", min=1024, max=65535, help="Port."),
    background: bool = typer.Option(False, "--background", help="Run in the background; stop with 'serve stop'."),
    cors_origins: list[str] = typer.Option([], "--cors-origin", help="Allowed CORS origin (repeatable)."),
    rpm: int | None = typer.Option(None, "--rate-limit", min=1, help="Requests per minute per client."),
    burst: int | None = typer.Option(None, "--burst", min=1, help="Requests a client may make at once."),
    no_rate_limit: bool = typer.Option(False, "--no-rate-limit", help="Switch rate limiting off."),
    no_log_requests: bool = typer.Option(False, "--no-log-requests", help="Do not write logs/requests.ndjson."),
    libraries: list[str] = typer.Option(
        [], "--library", help="Serve a library version: NAME@VERSION=RUN_ID|CONFIG|FOLDER (repeatable)."
    ),
    libraries_file: Path | None = typer.Option(
        None, "--libraries", help="libraries.yaml of library versions to serve (re-read when it changes)."
    ),
    embedding_model: str = typer.Option(
        "local", "--embedding-model", help="With --library: model for libraries built from a folder."
    ),
    refresh_interval: float = typer.Option(
        3600.0, "--refresh-interval", min=0, help="With --library: seconds between refreshes of remote libraries."
    ),
    require_auth: bool = typer.Option(False, "--require-auth", help="With --library: every request needs a key."),
    json_out: bool = Json,
) -> None:
    """Start the HTTP retrieval API (and the search page at /); with --library/--libraries, the
    /libraries API over many libraries and versions."""
    from indexfoundry.surfaces.http import processes

    limit = _rate_limit(rpm, burst, no_rate_limit)
    origins = cors_origins or None
    log_requests = False if no_log_requests else None
    if libraries or libraries_file is not None:
        if background:
            raise ConfigInvalid(
                "--library/--libraries serve in the foreground only",
                suggestion="Drop --background (run it under your process manager)",
            )
        processes.serve_libraries(
            libraries,
            libraries_file,
            runs_dir=runs_dir,
            host=host,
            port=port,
            embedding_model=embedding_model,
            refresh_interval_s=refresh_interval,
            cors_origins=origins,
            rate_limit=limit,
            require_auth=require_auth,
        )
        return
    if background:
        out = api.serve_start(
            run_id,
            runs_dir=runs_dir,
            host=host,
            port=port,
            cors_origins=origins,
            rate_limit=limit,
            log_requests=log_requests,
        )
        if json_out:
            print_json(out)
        else:
            state = "already running" if out.already_running else "started"
            typer.echo(f"server {state}: pid {out.server.pid}, {out.server.url}/ (API {out.retrieval_endpoint})")
        return
    processes.serve_foreground(
        run_id,
        runs_dir=runs_dir,
        host=host,
        port=port,
        cors_origins=origins,
        rate_limit=limit,
        log_requests=log_requests,
    )


@app.command("status")
def status(runs_dir: Path | None = RunsDir, json_out: bool = Json) -> None:
    """List the HTTP servers running for this runs folder."""
    from indexfoundry.surfaces.http.processes import serve_status

    servers = serve_status(runs_dir=runs_dir)
    if json_out:
        print_json(servers)
        return
    if not servers:
        typer.echo("no server running")
    for s in servers:
        health = f"serving {s.serving_run_id}" if s.healthy and s.serving_run_id else "not answering"
        typer.echo(f"pid {s.pid}  {s.url}{s.base_path}  run {s.run_spec}  {health}  since {s.started_at}")


@app.command("stop")
def stop(
    runs_dir: Path | None = RunsDir,
    port: int | None = typer.Option(None, "--port", help="Stop only the server on this port."),
    json_out: bool = Json,
) -> None:
    """Stop background servers gracefully (in-flight requests finish)."""
    from indexfoundry.surfaces.http.processes import serve_stop

    out = serve_stop(runs_dir=runs_dir, port=port)
    if json_out:
        print_json(out)
        return
    if not out.stopped:
        typer.echo("no server running")
    for s in out.stopped:
        typer.echo(f"stopped pid {s.pid} ({s.url})")


@app.command("openapi")
def openapi(
    run_id: str = typer.Option(LATEST, "--run-id", help="Run whose served/openapi.json is written."),
    runs_dir: Path | None = RunsDir,
    no_schemas: bool = typer.Option(False, "--no-schemas", help="Leave the JSON Schemas out."),
    json_out: bool = Json,
) -> None:
    """Write served/openapi.json (generated from the app the server runs)."""
    out = api.serve_openapi(run_id, runs_dir=runs_dir, include_schemas=not no_schemas)
    if json_out:
        print_json(out)
    else:
        typer.echo(f"{out.path}  (OpenAPI {out.openapi_version}, {len(out.paths)} paths)")
