"""The OpenAPI document: built from the app's routes (so the spec and the server cannot disagree),
cleaned of what this API never answers, and served at ``{base}/openapi.json`` behind the same key
check as the data endpoints (it names the served run's filter fields and limits).
"""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime.
from collections.abc import Callable
from typing import Any, cast

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse

from indexfoundry.surfaces.http.guard import Guard, RequestKey, Served
from indexfoundry.surfaces.http.settings import HttpSettings


def spec_router(base: str, serves_libraries: bool) -> APIRouter:
    """``GET {base}/openapi.json``: for one run, behind the served run's check; for many libraries,
    behind the key check when the server requires keys."""
    router = APIRouter()
    if not serves_libraries:

        @router.get(f"{base}/openapi.json", include_in_schema=False)
        def openapi_document(request: Request, run: Served) -> JSONResponse:
            """The OpenAPI spec. With authentication on it needs a key like the data endpoints: it names
            the served run's filter fields and limits. (The page is a static shell with no data.)"""
            return JSONResponse(request.app.openapi())

    else:

        @router.get(f"{base}/openapi.json", include_in_schema=False)
        def library_openapi_document(request: Request, key: RequestKey) -> JSONResponse:
            """The OpenAPI spec (behind the key check when the server requires keys)."""
            guard: Guard = request.app.state.guard
            guard.client(request, key)
            return JSONResponse(request.app.openapi())

    return router


def _strip(node: Any, drop_refs: bool) -> Any:
    """Remove FastAPI's 422 answers (this API answers 400) and, optionally, schema references."""
    if isinstance(node, dict):
        if drop_refs and "$ref" in node and str(node["$ref"]).startswith("#/components/schemas/"):
            return {"type": "object"}
        return {k: _strip(v, drop_refs) for k, v in node.items() if k != "422"}
    if isinstance(node, list):
        return [_strip(v, drop_refs) for v in node]
    return node


def _drop_security(spec: dict[str, Any]) -> None:
    """Keys are optional on this server: the spec must not claim the endpoints need one."""
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            operation.pop("security", None)
    spec.get("components", {}).pop("securitySchemes", None)
    for status in ("401", "403"):
        for operations in spec.get("paths", {}).values():
            for operation in operations.values():
                operation.get("responses", {}).pop(status, None)


def openapi_builder(app: FastAPI, settings: HttpSettings, include_schemas: bool = True) -> Callable[[], Any]:
    """The app's ``openapi()``: the 3.1 document of its routes, built once and kept."""

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
            _drop_security(spec)
        app.openapi_schema = spec
        return spec

    return build
