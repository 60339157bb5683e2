"""The HTTP retrieval API: a FastAPI app over the served run (one ``Run`` handle at a time).

``create_app(settings)`` builds the app; ``openapi_spec(settings)`` returns the OpenAPI 3.1
document of that same app (the serve phase writes it to ``served/openapi.json``), so the
spec and the server cannot disagree. The factory only wires: one ``APIRouter`` per area
(``search_routes``, ``document_routes``, ``service_routes``, ``freshness``, ``library_routes``,
``openapi``, ``page``, ``metrics``, ``runs_routes``: the runs dashboard), the ``Guard``
(``guard``) and the middleware. Routes are adapters only: they authenticate, rate limit, and
call the served run's ``Run`` handle (``api.open_run``), leased for the request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from indexfoundry.errors import ConfigInvalid
from indexfoundry.surfaces.http.document_routes import document_router
from indexfoundry.surfaces.http.errors import install_error_handlers
from indexfoundry.surfaces.http.freshness import freshness_router
from indexfoundry.surfaces.http.guard import Guard
from indexfoundry.surfaces.http.holder import RunHolder
from indexfoundry.surfaces.http.library_routes import library_router
from indexfoundry.surfaces.http.limits import BodyLimitMiddleware
from indexfoundry.surfaces.http.metrics import HttpMetrics, MetricsMiddleware, metrics_router
from indexfoundry.surfaces.http.openapi import openapi_builder, spec_router
from indexfoundry.surfaces.http.page import mount_static, page_router
from indexfoundry.surfaces.http.reqlog import RequestLogMiddleware
from indexfoundry.surfaces.http.runs_routes import runs_router
from indexfoundry.surfaces.http.search_routes import search_router
from indexfoundry.surfaces.http.service_routes import service_router
from indexfoundry.surfaces.http.settings import HttpSettings

if TYPE_CHECKING:
    from indexfoundry.api import LibraryReader


def create_app(
    settings: HttpSettings, holder: RunHolder | None = None, libraries: LibraryReader | None = None
) -> FastAPI:
    """The HTTP API for ``settings``; ``holder`` (default: built from the settings) serves the run.

    With ``libraries`` the app serves many libraries and versions instead of one run: the
    ``/libraries`` endpoints (list, search with library and version or range, pages, page,
    section), ``/health`` and the spec; the single-run endpoints are not offered.
    """
    base = settings.base_path
    holder = holder or RunHolder(settings.runs_dir, settings.run_id, reload_interval_s=settings.reload_interval_s)
    guard = Guard(settings, holder)
    app = FastAPI(
        title=settings.api_info.title,
        version=settings.api_info.version,
        description=settings.api_info.description or "Search an IndexFoundry index.",
        openapi_url=None,  # served by the spec router, behind the same key check as the data endpoints
        docs_url=None,
        redoc_url=None,
        lifespan=_lifespan(settings, guard, holder, libraries),
    )
    app.state.holder = holder  # the routes' dependencies find the served run and the guard here
    app.state.guard = guard
    app.state.metrics = metrics = HttpMetrics(settings.runs_dir, lambda: holder.current.id if holder.current else None)
    install_error_handlers(app)

    wanted: set[str] = set(settings.endpoints)
    if libraries is not None:
        wanted &= {"health"}
        app.include_router(library_router(settings, libraries))
    app.include_router(search_router(settings, wanted))
    app.include_router(document_router(base, wanted))
    app.include_router(service_router(base, wanted, holder, guard, serves_libraries=libraries is not None))
    if "check_freshness" in wanted:
        app.include_router(freshness_router(settings, guard))
    app.include_router(spec_router(base, serves_libraries=libraries is not None))
    app.include_router(page_router(settings, serves_libraries=libraries is not None))
    app.include_router(metrics_router(metrics))
    app.include_router(runs_router(settings))
    mount_static(app)
    _add_middleware(app, settings, holder, metrics)
    app.openapi = openapi_builder(app, settings)  # type: ignore[method-assign]
    return app


def _lifespan(
    settings: HttpSettings, guard: Guard, holder: RunHolder, libraries: LibraryReader | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Load the keys, then serve: the libraries' registry refreshing, or the run holder's run."""

    def no_keys() -> ConfigInvalid:
        return ConfigInvalid(
            "authentication is required but no API key is configured",
            suggestion=f"Set ${settings.api_keys_env} or serve.api_key_file",
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        guard.load_keys()
        if libraries is not None:
            if settings.require_auth and not len(guard.keys):
                raise no_keys()
            libraries.registry.start_refreshing()
            try:
                yield
            finally:
                libraries.registry.stop()
                libraries.runs.close()
            return
        holder.start()
        if guard.auth_required(holder.current) and not len(guard.keys):
            holder.stop()
            raise no_keys()
        try:
            yield
        finally:
            holder.stop()

    return lifespan


def _add_middleware(app: FastAPI, settings: HttpSettings, holder: RunHolder, metrics: HttpMetrics) -> None:
    """CORS (when origins are configured), the body limit, the request log and the request
    counts, outermost last."""
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type"],
            expose_headers=["Retry-After", "X-Request-ID"],
            max_age=600,
        )
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_request_bytes)
    app.add_middleware(RequestLogMiddleware, holder=holder, enabled=settings.log_requests)
    app.add_middleware(MetricsMiddleware, requests=metrics.requests, rate_limited=metrics.rate_limited)


def openapi_spec(
    settings: HttpSettings, include_schemas: bool = True, libraries: LibraryReader | None = None
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the app built from ``settings`` (no run needs to be loaded).

    Which run is served and from where never shapes the document, so without ``libraries`` it
    is built once per process for the other settings (every docs-mode refresh writes one)."""
    key = json.dumps(
        [settings.model_dump(mode="json", exclude={"runs_dir", "run_id"}), include_schemas], sort_keys=True
    )
    with _spec_lock:
        cached = _specs.get(key) if libraries is None else None
    if cached is None:
        app = create_app(settings, RunHolder(settings.runs_dir, settings.run_id), libraries)
        app.openapi_schema = None
        cached = json.dumps(openapi_builder(app, settings, include_schemas)(), sort_keys=True)
        if libraries is None:
            with _spec_lock:
                _specs[key] = cached
                while len(_specs) > 16:
                    _specs.pop(next(iter(_specs)))
    return cast(dict[str, Any], json.loads(cached))


_specs: dict[str, str] = {}
_spec_lock = threading.Lock()
