"""HTTP server processes: run one here, start one in the background, find and stop them.

A server (foreground or background) records itself in ``<runs>/.servers/<port>.json`` while
it runs (``api.ServerRecords``), so ``serve status`` and ``serve stop`` can find it, and marks
the run it serves as in use (``RunHolder``), so ``run cleanup`` leaves that run alone. A
background server is this package's CLI (``indexfoundry serve start``) in a child process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid, IndexFoundryError, RunNotFound
from indexfoundry.models.serve import ServerInfo, ServerStatus, ServeStartOutput, ServeStopOutput

if TYPE_CHECKING:
    from indexfoundry.models.config import RateLimitConfig
    from indexfoundry.surfaces.http.settings import HttpSettings

STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0

# Background servers started by this process, so they can be reaped (no zombies) when stopped.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}

log = logging.getLogger("indexfoundry.http")


def http_settings(runs_dir: Path, run_spec: str, **overrides: Any) -> HttpSettings:
    """``HttpSettings`` for serving ``run_spec``: its run's ``serve`` section and retrieval profile."""
    from indexfoundry.surfaces.http.settings import HttpSettings

    serve, served = api.served_settings(runs_dir, run_spec)
    for key, value in served.items():
        overrides.setdefault(key, value)
    return HttpSettings.from_config(serve, runs_dir, run_spec, **overrides)


# ---------------------------------------------------------------- records and health
def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _health(info: ServerInfo, timeout: float = 2.0) -> dict[str, Any] | None:
    import httpx  # only when a server is asked (keeps every CLI command's start light)

    try:
        response = httpx.get(f"{info.url}{info.base_path}/health", timeout=timeout)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    body: dict[str, Any] = response.json()
    return body


def _alive(records: api.ServerRecords, info: ServerInfo) -> bool:
    return records.running(info.pid) and not _is_zombie(info.pid)


def _live_info(runs_dir: Path, port: int) -> ServerInfo | None:
    records = api.ServerRecords(runs_dir)
    info = records.read(port)
    return info if info is not None and _alive(records, info) else None


def _is_zombie(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    return child is not None and child.poll() is not None


# ---------------------------------------------------------------- foreground
def run_server(settings: HttpSettings, libraries: api.LibraryReader | None = None) -> None:
    """Run the HTTP server in this process until SIGINT/SIGTERM (graceful: in-flight requests finish).

    With ``libraries`` (an ``api.LibraryReader``) it serves many libraries instead of one run.
    """
    import uvicorn

    from indexfoundry.surfaces.http.app import create_app
    from indexfoundry.surfaces.http.auth import KeyRing
    from indexfoundry.surfaces.http.holder import RunHolder

    runs_dir: Path = settings.runs_dir
    existing = _live_info(runs_dir, settings.port)
    if existing is not None:
        raise ConfigInvalid(
            f"a server (pid {existing.pid}) is already serving on port {settings.port}",
            suggestion="Stop it with 'indexfoundry serve stop --port PORT' or pick another --port",
        )
    if not _port_free(settings.host, settings.port):
        raise ConfigInvalid(f"port {settings.port} on {settings.host} is in use", suggestion="Pick another --port")
    # Load the run and the keys before uvicorn starts, so a user mistake is one clear error line
    # (uvicorn would report a failing startup with a traceback).
    holder = RunHolder(runs_dir, settings.run_id, reload_interval_s=settings.reload_interval_s)
    if libraries is None:
        holder.load_initial()
    loaded = holder.current
    needs_keys = settings.require_auth or (loaded is not None and loaded.profile.security.require_auth)
    if needs_keys and not len(KeyRing.load(settings.api_keys_env, settings.api_key_file)):
        holder.stop()
        raise ConfigInvalid(
            "authentication is required but no API key is configured",
            suggestion=f"Set ${settings.api_keys_env} or serve.api_key_file",
        )
    if settings.host not in ("127.0.0.1", "::1", "localhost") and not needs_keys:
        print(
            f"warning: serving on {settings.host} without authentication; anyone who can reach it can search",
            file=sys.stderr,
        )
    app = create_app(settings, holder, libraries)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=False,  # requests go to the run's logs/requests.ndjson
        timeout_graceful_shutdown=10,
        server_header=False,
        lifespan="on",
        **settings.proxy_options(),
    )
    server = uvicorn.Server(config)
    # Our messages ("serving run ...", reload failures) go where uvicorn's go.
    ours = logging.getLogger("indexfoundry.http")
    ours.handlers = list(logging.getLogger("uvicorn.error").handlers)
    ours.setLevel(logging.INFO)
    ours.propagate = False
    records = api.ServerRecords(runs_dir)
    info = records.record(
        pid=os.getpid(),
        host=settings.host,
        port=settings.port,
        url=_url(settings.host, settings.port),
        base_path=settings.base_path,
        run_spec=settings.run_id if libraries is None else "libraries",
        log_file=os.environ.get("INDEXFOUNDRY_SERVER_LOG"),
    )
    try:
        server.run()
    finally:
        records.remove(settings.port, os.getpid())
    if not server.started:
        raise IndexFoundryError(
            f"the server on {info.url} did not start",
            code="CONFIG_INVALID",
            suggestion="Read the messages above (a run that cannot be loaded, no API key, a busy port)",
        )


def serve_foreground(
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    cors_origins: list[str] | None = None,
    rate_limit: RateLimitConfig | None = None,
    log_requests: bool | None = None,
) -> None:
    """Run the HTTP API of ``run_id`` in this process until SIGINT/SIGTERM (graceful shutdown)."""
    settings = http_settings(
        api.runs_dir_for(runs_dir),
        run_id,
        host=host,
        port=port,
        cors_origins=cors_origins,
        rate_limit=rate_limit,
        log_requests=log_requests,
    )
    run_server(settings)


def serve_libraries(
    libraries: list[str],
    libraries_file: str | Path | None = None,
    *,
    runs_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    embedding_model: str = "local",
    refresh_interval_s: float = 3600.0,
    cors_origins: list[str] | None = None,
    rate_limit: RateLimitConfig | None = None,
    require_auth: bool = False,
) -> None:
    """Serve many libraries and versions over HTTP in this process (``NAME@VERSION=RUN_OR_CONFIG``
    flags and/or a ``libraries.yaml``), until SIGINT/SIGTERM (``serve start --library/--libraries``)."""
    from indexfoundry.surfaces.http.settings import HttpSettings

    root = api.runs_dir_for(runs_dir)
    registry = api.library_registry(
        root,
        [api.parse_library_flag(value) for value in libraries],
        Path(libraries_file).expanduser().resolve() if libraries_file is not None else None,
        embedding_model=embedding_model,
        refresh_interval_s=refresh_interval_s,
    )
    for library in registry.libraries():  # build (or find) every library's run before answering
        try:
            log.info("serving %s from run %s", library.label, library.run_id())
        except IndexFoundryError as error:
            log.error("library %s is not available: %s", library.label, error.one_line())
    data: dict[str, Any] = {
        "runs_dir": root,
        "host": host,
        "port": port,
        "endpoints": ["health"],
        "log_requests": False,
        "require_auth": require_auth,
    }
    if cors_origins:
        data["cors_origins"] = cors_origins
    if rate_limit is not None:
        data["rate_limit"] = rate_limit
    settings = HttpSettings.model_validate(data)
    run_server(settings, api.library_reader(registry, api.RunPool(root, size=64)))


# ---------------------------------------------------------------- background
def start_background(
    runs_dir: Path,
    run_spec: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    cors_origins: list[str] | None = None,
    rate_limit: RateLimitConfig | None = None,
    log_requests: bool | None = None,
    timeout_s: float = STARTUP_TIMEOUT_S,
) -> ServeStartOutput:
    """Start a server in a background process and wait until it answers ``/health``
    (``api.serve_start`` checks the run first)."""
    existing = _live_info(runs_dir, port)
    if existing is not None:
        if existing.run_spec == run_spec and existing.host == host:
            return ServeStartOutput(
                success=True,
                already_running=True,
                server=existing,
                retrieval_endpoint=existing.url + existing.base_path,
            )
        raise ConfigInvalid(
            f"port {port} is already used by a server of run {existing.run_spec} (pid {existing.pid})",
            suggestion="Stop it with 'indexfoundry serve stop --port PORT' or pick another --port",
        )
    if not _port_free(host, port):
        raise ConfigInvalid(f"port {port} on {host} is in use", suggestion="Pick another --port")
    args = [
        sys.executable,
        "-m",
        "indexfoundry",
        "serve",
        "start",
        "--run-id",
        run_spec,
        "--runs-dir",
        str(runs_dir.resolve()),
        "--host",
        host,
        "--port",
        str(port),
    ]
    for origin in cors_origins or []:
        args += ["--cors-origin", origin]
    if rate_limit is not None:
        if rate_limit.enabled:
            args += ["--rate-limit", str(rate_limit.requests_per_minute), "--burst", str(rate_limit.burst)]
        else:
            args += ["--no-rate-limit"]
    if log_requests is False:
        args += ["--no-log-requests"]
    log_path = api.ServerRecords(runs_dir).log_file(port)
    env = {**os.environ, "INDEXFOUNDRY_SERVER_LOG": str(log_path)}
    with log_path.open("ab") as log_file:
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # survives the terminal that started it
            env=env,
            close_fds=True,
        )
    _CHILDREN[child.pid] = child
    return _wait_until_healthy(child, runs_dir, port, log_path, timeout_s)


def _wait_until_healthy(
    child: subprocess.Popen[bytes], runs_dir: Path, port: int, log_path: Path, timeout_s: float
) -> ServeStartOutput:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            _CHILDREN.pop(child.pid, None)
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
            raise IndexFoundryError(
                f"the server exited during startup: {' | '.join(tail) or 'no output'}",
                code="CONFIG_INVALID",
                suggestion=f"See {log_path}",
            )
        info = _live_info(runs_dir, port)
        if info is not None and info.pid == child.pid and _health(info, timeout=1.0) is not None:
            return ServeStartOutput(success=True, server=info, retrieval_endpoint=info.url + info.base_path)
        time.sleep(0.1)
    _terminate(child.pid)
    raise IndexFoundryError(
        f"the server did not answer within {timeout_s:.0f} s",
        code="CONFIG_INVALID",
        recoverable=True,
        suggestion=f"See {log_path}",
    )


# ---------------------------------------------------------------- status / stop
def server_status(runs_dir: Path) -> list[ServerStatus]:
    """Servers recorded under the runs folder; records of dead processes are removed."""
    out: list[ServerStatus] = []
    records = api.ServerRecords(runs_dir)
    for info in records.recorded():
        if not _alive(records, info):
            records.remove(info.port)
            continue
        health = _health(info)
        out.append(
            ServerStatus(
                **info.model_dump(),
                alive=True,
                healthy=health is not None,
                serving_run_id=(health or {}).get("run_id"),
            )
        )
    return out


def serve_status(*, runs_dir: str | Path | None = None) -> list[ServerStatus]:
    """HTTP servers running for this runs folder."""
    return server_status(api.runs_dir_for(runs_dir))


def _exited(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is not None
    return not api.ServerRecords.running(pid)


def _terminate(pid: int, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM (uvicorn finishes in-flight requests), then SIGKILL if it does not exit in time."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not _exited(pid):
        time.sleep(0.05)
    if not _exited(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        child.wait(timeout=timeout_s)


def stop_servers(runs_dir: Path, port: int | None = None) -> ServeStopOutput:
    """Stop the server on ``port`` (default: every server of this runs folder)."""
    stopped: list[ServerInfo] = []
    targets = [s for s in server_status(runs_dir) if port is None or s.port == port]
    if port is not None and not targets:
        raise RunNotFound(f"no server is running on port {port}", suggestion="See 'indexfoundry serve status'")
    records = api.ServerRecords(runs_dir)
    for status in targets:
        info = ServerInfo.model_validate(status.model_dump(include=set(ServerInfo.model_fields)))
        _terminate(info.pid)
        records.remove(info.port, info.pid)
        stopped.append(info)
    return ServeStopOutput(stopped=stopped)


def serve_stop(*, runs_dir: str | Path | None = None, port: int | None = None) -> ServeStopOutput:
    """Stop the server on ``port`` (default: all servers of this runs folder)."""
    return stop_servers(api.runs_dir_for(runs_dir), port)
