"""The HTTP retrieval API: a FastAPI app over the served run (one ``Run`` handle at a time).

``create_app(settings)`` builds the app; ``openapi_spec(settings)`` returns the OpenAPI 3.1
document of that same app (the serve phase writes it to ``served/openapi.json``), so the
spec and the server cannot disagree. Routes are adapters only: they authenticate, rate
limit, and call the served run's ``Run`` handle (``api.open_run``), leased for the request.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime and
# they refer to names local to ``create_app`` (the per-app search body model, the guarded run).
import html
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, StrictStr, create_model

from indexfoundry import __version__, api
from indexfoundry.errors import ConfigInvalid, IndexFoundryError, RunNotFound
from indexfoundry.models.records import DocumentChunk
from indexfoundry.models.retrieval import AllowedFilter, SearchFilter, SearchMode, SearchRequest, SearchResponse
from indexfoundry.models.serve import (
    DocumentView,
    HealthView,
    StatsView,
)
from indexfoundry.surfaces.http.auth import KeyRing, Principal, auth_error, presented_key
from indexfoundry.surfaces.http.errors import ErrorEnvelope, HttpProblem, install_error_handlers, retry_after_header
from indexfoundry.surfaces.http.freshness import add_freshness_route
from indexfoundry.surfaces.http.holder import RunHolder
from indexfoundry.surfaces.http.limits import BodyLimitMiddleware
from indexfoundry.surfaces.http.ratelimit import RateLimiter
from indexfoundry.surfaces.http.reqlog import RequestLogMiddleware
from indexfoundry.surfaces.http.settings import HttpSettings

if TYPE_CHECKING:
    from indexfoundry.api import LibraryReader

log = logging.getLogger("indexfoundry.http")

HEX_ID = r"^[0-9a-f]{64}$"
DEFAULT_NAMESPACE = "default"

_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorEnvelope, "description": "Invalid request (CONFIG_INVALID)"},
    401: {"model": ErrorEnvelope, "description": "Missing or invalid API key (AUTH_REQUIRED)"},
    403: {"model": ErrorEnvelope, "description": "The key may not search this namespace (AUTH_REQUIRED)"},
    413: {"model": ErrorEnvelope, "description": "Request body too large (REQUEST_TOO_LARGE)"},
    429: {
        "model": ErrorEnvelope,
        "description": "Rate limited (RATE_LIMITED); see Retry-After",
        "headers": {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}},
    },
    500: {"model": ErrorEnvelope, "description": "Internal error (INTERNAL_ERROR)"},
    503: {"model": ErrorEnvelope, "description": "No run loaded yet, or the store is unavailable"},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorEnvelope, "description": "No such document or chunk (NOT_FOUND)"}
}

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key")
_bearer = HTTPBearer(auto_error=False, description="API key as a bearer token")


def _json_integer(value: Any) -> Any:
    """JSON Schema's integer: 3 and 3.0 yes; true, "3" and 3.5 no (pydantic's lax int takes the first two)."""
    if isinstance(value, bool | str):
        raise ValueError("must be an integer")
    return value


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
Scalar = StrictStr | StrictInt | StrictFloat | StrictBool
Number = StrictInt | StrictFloat
_VALUE_KINDS: tuple[tuple[frozenset[str], Any, str], ...] = (
    (frozenset({"eq", "neq", "contains"}), Scalar, "A string, number or boolean"),
    (frozenset({"gt", "gte", "lt", "lte"}), Number, "A number"),
    (
        frozenset({"in"}),
        # One type per list: stores compare lists of a single type (the service refuses mixed lists).
        Annotated[list[StrictStr], Field(min_length=1)]
        | Annotated[list[Number], Field(min_length=1)]
        | Annotated[list[StrictBool], Field(min_length=1)],
        "A non-empty list of values of one type (strings, numbers or booleans)",
    ),
)


def filter_item_type(allowed: list[AllowedFilter]) -> Any:
    """The filter item of the search body: one variant per allowed field and kind of operator,
    so the spec states exactly which filters the run accepts (the retrieval profile's list)."""
    variants: list[Any] = []
    for flt in allowed:
        for ops, value_type, value_doc in _VALUE_KINDS:
            chosen = sorted(set(flt.operators) & ops)
            if not chosen:
                continue
            name = "Filter_" + "".join(ch if ch.isalnum() else "_" for ch in flt.field) + "_" + "_".join(chosen)
            variants.append(
                create_model(
                    name,
                    __config__=SearchFilter.model_config,
                    field=(Literal[flt.field], Field(description="Metadata field")),  # type: ignore[arg-type]
                    op=(Literal[tuple(chosen)], Field(description="Operator")),  # type: ignore[arg-type]
                    value=(value_type, Field(description=value_doc)),
                )
            )
    if not variants:
        return SearchFilter
    union: Any = variants[0]
    for variant in variants[1:]:
        union = union | variant
    return union


def search_body_model(settings: HttpSettings) -> type[BaseModel]:
    """The search request body: ``SearchRequest`` without ``mode`` (the path says it), with the
    server's configured query-length and top_k limits, so the spec states the real limits."""
    fields: dict[str, Any] = {}
    for name, info in SearchRequest.model_fields.items():
        if name == "mode":
            continue
        fields[name] = (info.annotation, info)
    if settings.allowed_filters is not None:
        filters = SearchRequest.model_fields["filters"]
        item = filter_item_type(settings.allowed_filters)
        fields["filters"] = (list[item], Field(default_factory=list, description=filters.description))  # type: ignore[valid-type]
    fields["query"] = (
        str,
        Field(
            min_length=1,
            max_length=settings.max_query_chars,
            description=SearchRequest.model_fields["query"].description,
        ),
    )
    top_k = SearchRequest.model_fields["top_k"]
    fields["top_k"] = (
        JsonInt,
        Field(default=top_k.default, ge=1, le=settings.max_top_k, description=top_k.description),
    )
    offset = SearchRequest.model_fields["offset"]
    fields["offset"] = (JsonInt, Field(default=offset.default, ge=0, le=1000, description=offset.description))
    model: type[BaseModel] = create_model(
        "SearchBody",
        __config__=SearchRequest.model_config,
        __doc__="Search request: query, top_k, filters (ANDed), offset for paging.",
        **fields,
    )
    return model


class Guard:
    """Authentication, namespace check and rate limiting for the API endpoints."""

    def __init__(self, settings: HttpSettings, holder: RunHolder) -> None:
        self.settings = settings
        self.holder = holder
        self.keys = KeyRing([])
        rl = settings.rate_limit
        self.limiter = RateLimiter(rl.requests_per_minute, rl.burst) if rl.enabled else None

    def load_keys(self) -> None:
        self.keys = KeyRing.load(self.settings.api_keys_env, self.settings.api_key_file)

    def auth_required(self, run: api.Run | None) -> bool:
        return self.settings.require_auth or (run is not None and run.profile.security.require_auth)

    def served(self, run: api.Run | None) -> api.Run:
        if run is None:
            error = RunNotFound(
                "no completed run is being served yet",
                recoverable=True,
                suggestion="Complete a pipeline run; the server loads it within seconds",
            )
            raise HttpProblem(503, error, retry_after_header(self.holder.reload_interval_s))
        return run

    def check(self, request: Request, key: str | None, leased: api.Run | None) -> api.Run:
        run = self.served(leased)
        principal = self.client(request, key, run)
        self.admit(run, principal)
        return run

    def client(self, request: Request, key: str | None, run: api.Run | None = None) -> Principal | None:
        """Rate limit the caller and authenticate its key (required by the server, or ``run``)."""
        principal: Principal | None = self.keys.authenticate(key) if key else None
        request.state.principal = principal.name if principal else None
        client = self.client_id(request)
        if self.limiter is not None:
            wait = self.limiter.acquire(client)
            if wait > 0:
                error = IndexFoundryError(
                    "too many requests",
                    code="RATE_LIMITED",
                    recoverable=True,
                    suggestion=f"Retry after {retry_after_header(wait)['Retry-After']} s",
                )
                raise HttpProblem(429, error, retry_after_header(wait))
        if self.auth_required(run) and principal is None:
            raise HttpProblem(401, auth_error(), {"WWW-Authenticate": "Bearer"})
        return principal

    @staticmethod
    def client_id(request: Request) -> str:
        """Whom the rate limit counts: the key's name, else the connecting address."""
        principal = getattr(request.state, "principal", None)
        return f"key:{principal}" if principal else f"ip:{request.client.host if request.client else '-'}"

    def admit(self, run: api.Run, principal: Principal | None) -> None:
        """May ``principal`` read ``run``: its profile's key requirement and namespaces."""
        if self.auth_required(run) and principal is None:
            raise HttpProblem(401, auth_error(), {"WWW-Authenticate": "Bearer"})
        namespace = run.namespace or DEFAULT_NAMESPACE
        allowed = run.profile.security.allowed_namespaces
        if (allowed is not None and namespace not in allowed) or (
            principal is not None and principal.namespaces is not None and namespace not in principal.namespaces
        ):
            error = IndexFoundryError(
                f"searching namespace '{namespace}' is not allowed",
                code="AUTH_REQUIRED",
                suggestion="Use a key allowed for this namespace (security.allowed_namespaces)",
            )
            raise HttpProblem(403, error)


def _static_text(name: str) -> str:
    return resources.files("indexfoundry.surfaces.http").joinpath("static", name).read_text(encoding="utf-8")


def create_app(
    settings: HttpSettings, holder: RunHolder | None = None, libraries: "LibraryReader | None" = None
) -> FastAPI:
    """The HTTP API for ``settings``; ``holder`` (default: built from the settings) serves the run.

    With ``libraries`` the app serves many libraries and versions instead of one run: the
    ``/libraries`` endpoints (list, search with library and version or range, pages, page,
    section), ``/health`` and the spec; the single-run endpoints are not offered.
    """
    base = settings.base_path
    holder = holder or RunHolder(settings.runs_dir, settings.run_id, reload_interval_s=settings.reload_interval_s)
    guard = Guard(settings, holder)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        guard.load_keys()
        if libraries is not None:
            if settings.require_auth and not len(guard.keys):
                raise ConfigInvalid(
                    "authentication is required but no API key is configured",
                    suggestion=f"Set ${settings.api_keys_env} or serve.api_key_file",
                )
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
            raise ConfigInvalid(
                "authentication is required but no API key is configured",
                suggestion=f"Set ${settings.api_keys_env} or serve.api_key_file",
            )
        try:
            yield
        finally:
            holder.stop()

    app = FastAPI(
        title=settings.api_info.title,
        version=settings.api_info.version,
        description=settings.api_info.description or "Search an IndexFoundry index.",
        openapi_url=None,  # served below, behind the same key check as the data endpoints
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.holder = holder
    app.state.guard = guard
    install_error_handlers(app)

    def checked(
        request: Request,
        x_api_key: Annotated[str | None, Depends(_api_key_header)],
        bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Iterator[api.Run]:
        key = presented_key(f"Bearer {bearer.credentials}" if bearer else None, x_api_key)
        with holder.leased() as leased:
            yield guard.check(request, key, leased)

    Served = Annotated[api.Run, Depends(checked)]
    wanted = set(settings.endpoints)
    if libraries is not None:
        wanted &= {"health"}
        from indexfoundry.surfaces.http.library_routes import add_library_routes  # it imports this module

        add_library_routes(app, settings, guard, libraries)
    Body = search_body_model(settings)

    def add_search(mode: SearchMode) -> None:
        def search(body: Body, run: Served) -> SearchResponse:  # type: ignore[valid-type]
            data = body.model_dump(mode="json")  # type: ignore[attr-defined]
            if "top_k" not in body.model_fields_set:  # type: ignore[attr-defined]
                data["top_k"] = min(run.profile.retrieval_config.default_top_k, settings.max_top_k)
            return run.search_request(SearchRequest.model_validate({**data, "mode": mode}))

        search.__doc__ = f"{mode.capitalize()} search over the served run; best result first."
        app.post(
            f"{base}/search/{mode}",
            response_model=SearchResponse,
            response_model_exclude_none=True,
            responses=_ERROR_RESPONSES,
            operation_id=f"search_{mode}",
            tags=["search"],
        )(search)

    if "search" in wanted:
        ModeBody = create_model(  # the same body plus an optional mode: the one search endpoint to start with
            "SearchAnyBody",
            __base__=Body,
            mode=(
                SearchMode | None,
                Field(
                    default=None,
                    description=(
                        "hybrid (default when the run offers it): semantic and keyword fused; "
                        "semantic: by meaning; keyword: BM25 term match"
                    ),
                ),
            ),
        )

        def search_any(body: ModeBody, run: Served) -> SearchResponse:
            """Search the served run in ``mode`` (default: hybrid); best result first."""
            data = body.model_dump(mode="json")
            if "top_k" not in body.model_fields_set:
                data["top_k"] = min(run.profile.retrieval_config.default_top_k, settings.max_top_k)
            data["mode"] = data.get("mode") or run.profile.retrieval_config.default_mode
            return run.search_request(SearchRequest.model_validate(data))

        app.post(
            f"{base}/search",
            response_model=SearchResponse,
            response_model_exclude_none=True,
            responses=_ERROR_RESPONSES,
            operation_id="search",
            tags=["search"],
        )(search_any)

    modes: tuple[SearchMode, ...] = ("semantic", "hybrid", "keyword")
    for mode in modes:
        if f"search_{mode}" in wanted:
            add_search(mode)

    if "get_document" in wanted:

        @app.get(
            f"{base}/documents/{{doc_id}}",
            response_model=DocumentView,
            response_model_exclude_none=True,
            responses={**_ERROR_RESPONSES, **_NOT_FOUND},
            operation_id="get_document",
            tags=["documents"],
        )
        def get_document(
            doc_id: Annotated[str, Path(pattern=HEX_ID, description="Document id")],
            run: Served,
            include_text: Annotated[bool, Query(description="Include the extracted text")] = False,
        ) -> DocumentView:
            """One document of the served run, with its chunks in order."""
            return run.document(doc_id, include_text=include_text)

    if "get_chunk" in wanted:

        @app.get(
            f"{base}/chunks/{{chunk_id}}",
            response_model=DocumentChunk,
            response_model_exclude_none=True,
            responses={**_ERROR_RESPONSES, **_NOT_FOUND},
            operation_id="get_chunk",
            tags=["documents"],
        )
        def get_chunk(
            chunk_id: Annotated[str, Path(pattern=HEX_ID, description="Chunk id")], run: Served
        ) -> DocumentChunk:
            """One chunk of the served run (the canonical DocumentChunk record)."""
            return run.chunk(chunk_id)

    if "stats" in wanted:

        @app.get(
            f"{base}/stats",
            response_model=StatsView,
            response_model_exclude_none=True,
            responses=_ERROR_RESPONSES,
            operation_id="stats",
            tags=["service"],
        )
        def stats(run: Served) -> StatsView:
            """What is served: the run, its counts, model, search modes and filters."""
            return run.stats()

    if "health" in wanted:

        @app.get(
            f"{base}/health",
            response_model=HealthView,
            response_model_exclude_none=True,
            responses={500: _ERROR_RESPONSES[500]},
            operation_id="health",
            tags=["service"],
        )
        def health() -> HealthView:
            """Liveness, and which run is served (never needs a key)."""
            current = holder.current
            return HealthView(
                status="ok" if current is not None or libraries is not None else "waiting",
                run_id=current.id if current is not None else None,
                version=__version__,
                auth_required=guard.auth_required(current),
            )

    if "check_freshness" in wanted:
        add_freshness_route(app, base, Served, guard, settings, _ERROR_RESPONSES)

    page = _static_text("index.html").replace("{{BASE_PATH}}", html.escape(base, quote=True))
    page = page.replace("{{TITLE}}", html.escape(settings.api_info.title))
    # With many libraries the page searches /libraries/search (every library, each result labelled).
    page = page.replace("{{LIBRARIES}}", "1" if libraries is not None else "")

    if libraries is None:

        @app.get(f"{base}/openapi.json", include_in_schema=False)
        def openapi_document(run: Served) -> JSONResponse:
            """The OpenAPI spec. With authentication on it needs a key like the data endpoints: it names
            the served run's filter fields and limits. (The page below is a static shell with no data.)"""
            return JSONResponse(app.openapi())

    else:

        @app.get(f"{base}/openapi.json", include_in_schema=False)
        def library_openapi_document(
            request: Request,
            x_api_key: Annotated[str | None, Depends(_api_key_header)],
            bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        ) -> JSONResponse:
            """The OpenAPI spec (behind the key check when the server requires keys)."""
            guard.client(request, presented_key(f"Bearer {bearer.credentials}" if bearer else None, x_api_key))
            return JSONResponse(app.openapi())

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": _PAGE_CSP})

    app.mount("/static", StaticFiles(packages=[("indexfoundry.surfaces.http", "static")]), name="static")

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
    app.openapi = _openapi_builder(app, settings)  # type: ignore[method-assign]
    return app


_PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _strip(node: Any, drop_refs: bool) -> Any:
    """Remove FastAPI's 422 answers (this API answers 400) and, optionally, schema references."""
    if isinstance(node, dict):
        if drop_refs and "$ref" in node and str(node["$ref"]).startswith("#/components/schemas/"):
            return {"type": "object"}
        return {k: _strip(v, drop_refs) for k, v in node.items() if k != "422"}
    if isinstance(node, list):
        return [_strip(v, drop_refs) for v in node]
    return node


def _openapi_builder(app: FastAPI, settings: HttpSettings, include_schemas: bool = True) -> Callable[[], Any]:
    def build() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = get_openapi(
            title=app.title,
            version=app.version,
            openapi_version="3.1.0",
            description=app.description,
            routes=app.routes,
        )
        spec = cast(dict[str, Any], _strip(spec, drop_refs=not include_schemas))
        schemas = spec.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        if not include_schemas:
            spec.get("components", {}).pop("schemas", None)
        if not settings.require_auth:
            # Keys are optional on this server: the spec must not claim the endpoints need one.
            for operations in spec.get("paths", {}).values():
                for operation in operations.values():
                    operation.pop("security", None)
            spec.get("components", {}).pop("securitySchemes", None)
            for status in ("401", "403"):
                for operations in spec.get("paths", {}).values():
                    for operation in operations.values():
                        operation.get("responses", {}).pop(status, None)
        app.openapi_schema = spec
        return spec

    return build


def openapi_spec(
    settings: HttpSettings, include_schemas: bool = True, libraries: "LibraryReader | None" = None
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
        cached = json.dumps(_openapi_builder(app, settings, include_schemas)(), sort_keys=True)
        if libraries is None:
            with _spec_lock:
                _specs[key] = cached
                while len(_specs) > 16:
                    _specs.pop(next(iter(_specs)))
    return cast(dict[str, Any], json.loads(cached))


_specs: dict[str, str] = {}
_spec_lock = threading.Lock()
