"""What a server serves, where running servers are recorded, and the run's OpenAPI file.

The HTTP server itself (its FastAPI app, the foreground, background and libraries server
processes, ``serve status`` and ``serve stop``) is the HTTP surface's: ``surfaces/http/``. The
use cases below the surfaces need two things from it: the OpenAPI spec generated from the app
the server runs (the serve phase writes it to ``served/openapi.json``, so the spec and the
server cannot disagree), and a server started in the background (``serve.auto_start``, the
``indexfoundry_serve_start`` tool). They reach them through ``HttpSurface``, the one port of
this layer onto a surface. The HTTP surface offers its implementation
(``surfaces/http/provider.py``) as a plugin does, through the package's entry point
``indexfoundry.surfaces: http`` (``pyproject.toml``), loaded the first time one is needed: no
module below the surfaces imports a surface, the only arrow to it is declared in the package
metadata, and a library call of ``api.pipeline_run`` writes the same spec as the CLI.
``use_http_surface`` hands in another one.

A server records itself in ``<runs>/.servers/<port>.json`` while it runs (``ServerRecords``), so
``serve status`` and ``serve stop`` can find it.
"""

from __future__ import annotations

import contextlib
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from indexfoundry.errors import ConfigInvalid, RunNotFound
from indexfoundry.models.config import ApiInfo, RateLimitConfig, ServeConfig, ServeEndpoint
from indexfoundry.models.ids import is_latest
from indexfoundry.models.retrieval import RetrievalProfile
from indexfoundry.models.serve import ServeOpenapiOutput, ServerInfo, ServeStartOutput
from indexfoundry.pipeline.inuse import pid_alive
from indexfoundry.pipeline.runs import pinned_latest, resolve_run_id
from indexfoundry.storage.atomic import atomic_write_json, atomic_write_text, dump_json, read_json
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.hashing import sha256_bytes
from indexfoundry.storage.layout import RunLayout, server_pid_file, servers_dir
from indexfoundry.storage.manifest import load_run_config

if TYPE_CHECKING:
    from collections.abc import Iterator

STARTUP_TIMEOUT_S = 60.0

# The entry-point group through which surfaces offer themselves to the use cases below them.
SURFACES_GROUP = "indexfoundry.surfaces"


class HttpSurface(Protocol):
    """What the use cases below the surfaces need from the HTTP surface."""

    def openapi_spec(
        self, serve: ServeConfig, runs_dir: Path, run_id: str, overrides: dict[str, Any], include_schemas: bool
    ) -> dict[str, Any]:
        """The OpenAPI document of the app a server of ``serve`` (plus ``overrides``) runs."""
        ...

    def start_background(
        self,
        runs_dir: Path,
        run_spec: str,
        *,
        host: str,
        port: int,
        cors_origins: list[str] | None,
        rate_limit: RateLimitConfig | None,
        log_requests: bool | None,
        timeout_s: float,
    ) -> ServeStartOutput:
        """Start a server of ``run_spec`` in a background process; return once it answers."""
        ...


_surface: HttpSurface | None = None


def http_surface() -> HttpSurface:
    """The HTTP surface: the one handed in with ``use_http_surface``, else the installed one."""
    global _surface
    if _surface is None:
        found = entry_points(group=SURFACES_GROUP, name="http")
        if not found:
            raise ConfigInvalid(
                "IndexFoundry's HTTP surface is not installed (no 'indexfoundry.surfaces: http' entry point)",
                suggestion="Reinstall IndexFoundry (scripts/setup.sh, or pip install the package or its wheel)",
            )
        _surface = next(iter(found)).load()
    return _surface


@contextlib.contextmanager
def use_http_surface(surface: HttpSurface) -> Iterator[HttpSurface]:
    """Use ``surface`` for the block (the previous one afterwards)."""
    global _surface
    previous, _surface = _surface, surface
    try:
        yield surface
    finally:
        _surface = previous


# ---------------------------------------------------------------- what a server serves
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
        if not is_latest(run_spec):
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


def served_settings(runs_dir: Path, run_spec: str) -> tuple[ServeConfig, dict[str, Any]]:
    """The ``serve`` section of the run to serve, and what its retrieval profile adds to the
    server's settings (the filters the search body accepts, whether a key is required)."""
    serve = serve_config_for(runs_dir, run_spec)
    profile = served_profile(runs_dir, run_spec)
    return serve, {
        "allowed_filters": profile.allowed_filters,
        "require_auth": serve.require_auth or profile.security.require_auth,
    }


def write_openapi(
    layout: RunLayout,
    serve: ServeConfig,
    *,
    api_info: ApiInfo | None = None,
    endpoints: list[ServeEndpoint] | None = None,
    include_schemas: bool = True,
) -> ServeOpenapiOutput:
    """Write ``served/openapi.json``, generated from the app the server runs (or taken from the
    runs folder's work cache when this code generated it for these settings: ``app/openapi_cache.py``)."""
    from indexfoundry.app.openapi_cache import spec_key, stored_spec
    from indexfoundry.phases.serve import profile_for

    overrides: dict[str, Any] = {"api_info": api_info, "endpoints": endpoints}
    if layout.retrieval_profile.is_file():
        profile = RetrievalProfile.model_validate(read_json(layout.retrieval_profile))
    else:
        profile = profile_for(load_run_config(layout))
    overrides["allowed_filters"] = profile.allowed_filters
    overrides["require_auth"] = serve.require_auth or profile.security.require_auth
    surface = http_surface()
    # The document depends on the settings and the code, never on the run: kept across runs.
    key = spec_key(surface, [serve, overrides, include_schemas])
    spec = stored_spec(
        layout.runs_dir,
        key,
        lambda: surface.openapi_spec(serve, layout.runs_dir, layout.run_id, overrides, include_schemas),
    )
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
    """Start a server of ``run_spec`` (a run that must exist, 'latest' or 'latest:<pipeline>') in a
    background process of the HTTP surface and wait until it answers ``/health``. A bare 'latest'
    follows the folder's one pipeline (CONFIG_INVALID when it holds several)."""
    if is_latest(run_spec):
        run_spec = pinned_latest(runs_dir, run_spec)
    else:
        RunLayout.existing(runs_dir, run_spec)
    return http_surface().start_background(
        runs_dir,
        run_spec,
        host=host,
        port=port,
        cors_origins=cors_origins,
        rate_limit=rate_limit,
        log_requests=log_requests,
        timeout_s=timeout_s,
    )


# ---------------------------------------------------------------- server records
class ServerRecords:
    """The pid files of the HTTP servers of one runs folder (``<runs>/.servers/<port>.json``)."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir

    def read(self, port: int) -> ServerInfo | None:
        """The record of the server on ``port`` (None: none, or unreadable), alive or not."""
        path = server_pid_file(self.runs_dir, port)
        return _read_info(path) if path.is_file() else None

    def recorded(self) -> list[ServerInfo]:
        """Every readable record, by file name."""
        folder = servers_dir(self.runs_dir)
        if not folder.is_dir():
            return []
        return [info for path in sorted(folder.glob("*.json")) if (info := _read_info(path)) is not None]

    @staticmethod
    def running(pid: int) -> bool:
        """True if a process with this pid exists (a zombie too: its parent knows better)."""
        return pid_alive(pid)

    def record(
        self, *, pid: int, host: str, port: int, url: str, base_path: str, run_spec: str, log_file: str | None
    ) -> ServerInfo:
        """Record a server that starts now."""
        info = ServerInfo(
            pid=pid,
            host=host,
            port=port,
            url=url,
            base_path=base_path,
            run_spec=run_spec,
            started_at=utc_now(),
            log_file=log_file,
        )
        atomic_write_json(server_pid_file(self.runs_dir, port), info)
        return info

    def remove(self, port: int, pid: int | None = None) -> None:
        """Remove the record of ``port`` (with ``pid``: only while it is that process's)."""
        path = server_pid_file(self.runs_dir, port)
        with contextlib.suppress(FileNotFoundError):
            if pid is None or ((current := _read_info(path)) is not None and current.pid == pid):
                path.unlink()

    def log_file(self, port: int) -> Path:
        """Where a background server on ``port`` writes its output (the folder is created)."""
        folder = servers_dir(self.runs_dir)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{port}.log"


def _read_info(path: Path) -> ServerInfo | None:
    try:
        return ServerInfo.model_validate(read_json(path))
    except (OSError, ValueError):
        return None
