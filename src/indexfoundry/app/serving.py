"""Starting, finding and stopping HTTP servers, and writing the OpenAPI spec.

A server (foreground or background) records itself in ``<runs>/.servers/<port>.json`` while
it runs, so ``serve status`` and ``serve stop`` can find it, and marks the run it serves as
in use (``pipeline/inuse.py``) so ``run cleanup`` leaves that run alone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from indexfoundry.errors import ConfigInvalid, IndexFoundryError, RunNotFound
from indexfoundry.models.config import ApiInfo, RateLimitConfig, ServeConfig, ServeEndpoint
from indexfoundry.models.retrieval import RetrievalProfile
from indexfoundry.models.serve import (
    ServeOpenapiOutput,
    ServerInfo,
    ServerStatus,
    ServeStartOutput,
    ServeStopOutput,
)
from indexfoundry.pipeline.inuse import pid_alive
from indexfoundry.pipeline.runs import LATEST, resolve_run_id
from indexfoundry.storage.atomic import atomic_write_json, atomic_write_text, dump_json, read_json
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.hashing import sha256_bytes
from indexfoundry.storage.layout import RunLayout, server_pid_file, servers_dir
from indexfoundry.storage.manifest import load_run_config

STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0

# Background servers started by this process, so they can be reaped (no zombies) when stopped.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}

log = logging.getLogger("indexfoundry.http")


def serve_config_for(runs_dir: Path, run_spec: str) -> ServeConfig:
    """The ``serve`` section of the run to serve ('latest': the newest completed run, or defaults)."""
    run_id = _served_run(runs_dir, run_spec)
    if run_id is None:
        return ServeConfig()
    return load_run_config(RunLayout.existing(runs_dir, run_id)).serve


def _served_run(runs_dir: Path, run_spec: str) -> str | None:
    """The run ``run_spec`` names now; None for 'latest' before any run completed."""
    try:
        return resolve_run_id(runs_dir, run_spec)
    except RunNotFound:
        if run_spec != LATEST:
            raise
        return None


def served_profile(runs_dir: Path, run_spec: str) -> RetrievalProfile:
    """The retrieval profile of the run to serve (its served/retrieval_profile.json, else the defaults)."""
    from indexfoundry.phases.serve import default_profile

    run_id = _served_run(runs_dir, run_spec)
    if run_id is not None:
        layout = RunLayout.existing(runs_dir, run_id)
        if layout.retrieval_profile.is_file():
            return RetrievalProfile.model_validate(read_json(layout.retrieval_profile))
    return default_profile()


def http_settings(runs_dir: Path, run_spec: str, **overrides: Any) -> Any:
    """``HttpSettings`` for serving ``run_spec`` (imported lazily: FastAPI loads on use)."""
    from indexfoundry.surfaces.http.settings import HttpSettings

    serve = serve_config_for(runs_dir, run_spec)
    profile = served_profile(runs_dir, run_spec)
    overrides.setdefault("allowed_filters", profile.allowed_filters)
    overrides.setdefault("require_auth", serve.require_auth or profile.security.require_auth)
    return HttpSettings.from_config(serve, runs_dir, run_spec, **overrides)


def write_openapi(
    layout: RunLayout,
    serve: ServeConfig,
    *,
    api_info: ApiInfo | None = None,
    endpoints: list[ServeEndpoint] | None = None,
    include_schemas: bool = True,
) -> ServeOpenapiOutput:
    """Write ``served/openapi.json``, generated from the app the server runs."""
    from indexfoundry.phases.serve import profile_for
    from indexfoundry.surfaces.http.app import openapi_spec
    from indexfoundry.surfaces.http.settings import HttpSettings

    overrides: dict[str, Any] = {"api_info": api_info, "endpoints": endpoints}
    if layout.retrieval_profile.is_file():
        profile = RetrievalProfile.model_validate(read_json(layout.retrieval_profile))
    else:
        profile = profile_for(load_run_config(layout))
    overrides["allowed_filters"] = profile.allowed_filters
    overrides["require_auth"] = serve.require_auth or profile.security.require_auth
    settings = HttpSettings.from_config(serve, layout.runs_dir, layout.run_id, **overrides)
    spec = openapi_spec(settings, include_schemas=include_schemas)
    text = dump_json(spec)
    atomic_write_text(layout.openapi, text)  # the bytes hashed below, encoded once
    return ServeOpenapiOutput(
        success=True,
        run_id=layout.run_id,
        path=str(layout.openapi),
        sha256=sha256_bytes(text.encode("utf-8")),
        openapi_version=str(spec["openapi"]),
        paths=sorted(spec.get("paths", {})),
    )


# ---------------------------------------------------------------- pid files
def _read_info(path: Path) -> ServerInfo | None:
    try:
        return ServerInfo.model_validate(read_json(path))
    except (OSError, ValueError):
        return None


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


def _live_info(runs_dir: Path, port: int) -> ServerInfo | None:
    path = server_pid_file(runs_dir, port)
    info = _read_info(path) if path.is_file() else None
    if info is not None and pid_alive(info.pid) and not _is_zombie(info.pid):
        return info
    return None


def _is_zombie(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    return child is not None and child.poll() is not None


# ---------------------------------------------------------------- foreground
def run_server(settings: Any, libraries: Any = None) -> None:
    """Run the HTTP server in this process until SIGINT/SIGTERM (graceful: in-flight requests finish).

    With ``libraries`` (an ``app.libraries.LibraryReader``) it serves many libraries instead of one run.
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
    info = ServerInfo(
        pid=os.getpid(),
        host=settings.host,
        port=settings.port,
        url=_url(settings.host, settings.port),
        base_path=settings.base_path,
        run_spec=settings.run_id if libraries is None else "libraries",
        started_at=utc_now(),
        log_file=os.environ.get("INDEXFOUNDRY_SERVER_LOG"),
    )
    pid_file = server_pid_file(runs_dir, settings.port)
    atomic_write_json(pid_file, info)
    try:
        server.run()
    finally:
        current = _read_info(pid_file)
        if current is not None and current.pid == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                pid_file.unlink()
    if not server.started:
        raise IndexFoundryError(
            f"the server on {info.url} did not start",
            code="CONFIG_INVALID",
            suggestion="Read the messages above (a run that cannot be loaded, no API key, a busy port)",
        )


def serve_libraries(
    runs_dir: Path,
    libraries: list[str],
    libraries_file: Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    embedding_model: str = "local",
    refresh_interval_s: float = 3600.0,
    cors_origins: list[str] | None = None,
    rate_limit: Any = None,
    require_auth: bool = False,
) -> None:
    """Serve many libraries over HTTP in the foreground (``serve start --library/--libraries``)."""
    from indexfoundry.app.handles import RunPool
    from indexfoundry.app.libraries import LibraryReader, LibraryRegistry, parse_library_flag
    from indexfoundry.surfaces.http.settings import HttpSettings

    registry = LibraryRegistry(
        runs_dir,
        [parse_library_flag(value) for value in libraries],
        libraries_file,
        embedding_model=embedding_model,
        refresh_interval_s=refresh_interval_s,
    )
    for library in registry.libraries():  # build (or find) every library's run before answering
        try:
            log.info("serving %s from run %s", library.label, library.run_id())
        except IndexFoundryError as error:
            log.error("library %s is not available: %s", library.label, error.one_line())
    data: dict[str, Any] = {
        "runs_dir": runs_dir,
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
    run_server(settings, LibraryReader(registry, RunPool(runs_dir, size=64)))


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
    """Start a server in a background process and wait until it answers ``/health``."""
    if run_spec != LATEST:
        RunLayout.existing(runs_dir, run_spec)
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
    folder = servers_dir(runs_dir)
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / f"{port}.log"
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
    folder = servers_dir(runs_dir)
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        info = _read_info(path)
        if info is None:
            continue
        alive = pid_alive(info.pid) and not _is_zombie(info.pid)
        if not alive:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
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


def _exited(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is not None
    return not pid_alive(pid)


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
    for status in targets:
        info = ServerInfo.model_validate(status.model_dump(include=set(ServerInfo.model_fields)))
        _terminate(info.pid)
        with contextlib.suppress(FileNotFoundError):
            path = server_pid_file(runs_dir, info.port)
            if (current := _read_info(path)) is not None and current.pid == info.pid:
                path.unlink()
        stopped.append(info)
    return ServeStopOutput(stopped=stopped)


def spec_summary(path: Path) -> dict[str, Any]:
    """Title, version and paths of a written spec (for the CLI)."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    return {"title": spec["info"]["title"], "version": spec["info"]["version"], "paths": sorted(spec["paths"])}
