"""IndexFoundry errors as HTTP answers: a status and ``{"error": {code, message, recoverable, suggestion}}``.

This module holds the HTTP surface's catch-all: anything unexpected becomes a 500 with code
``INTERNAL_ERROR`` and no traceback in the answer (the traceback goes to the server's log).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from indexfoundry.errors import ErrorCode, IndexFoundryError
from indexfoundry.models.base import Strict

log = logging.getLogger("indexfoundry.http")

STATUS_BY_CODE: dict[str, int] = {
    "CONFIG_INVALID": 400,
    "AUTH_REQUIRED": 401,
    "NOT_FOUND": 404,
    "RUN_NOT_FOUND": 404,
    "REQUEST_TOO_LARGE": 413,
    "RATE_LIMITED": 429,
    "RUN_LOCKED": 503,
    "DB_ERROR": 503,
    "EMBED_ERROR": 503,
}


class ErrorBody(Strict):
    """The ``error`` object of an error response."""

    code: ErrorCode = Field(description="Error code (e.g. CONFIG_INVALID, FETCH_FAILED)")
    message: str = Field(description="What went wrong")
    recoverable: bool = Field(description="Whether retrying the same request may succeed")
    suggestion: str | None = Field(default=None, description="What to try next")
    details: dict[str, Any] | None = Field(default=None, description="Structured details, when useful")


class ErrorEnvelope(Strict):
    """Body of every error answer."""

    error: ErrorBody = Field(description="The error")


class HttpProblem(Exception):
    """An IndexFoundry error with an explicit HTTP status and headers (e.g. 503 while no run is loaded)."""

    def __init__(self, status: int, error: IndexFoundryError, headers: dict[str, str] | None = None) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error
        self.headers = headers or {}


def status_for(error: IndexFoundryError) -> int:
    """HTTP status of an IndexFoundry error."""
    return STATUS_BY_CODE.get(error.code, 500)


def error_response(status: int, error: IndexFoundryError, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON answer for ``error``; a 500 never carries internal details."""
    body = ErrorBody(
        code=error.code,
        message=error.message,
        recoverable=error.recoverable,
        suggestion=error.suggestion,
        details=(error.details or None) if status < 500 else None,
    )
    content = ErrorEnvelope(error=body).model_dump(mode="json", exclude_none=True)
    return JSONResponse(content, status_code=status, headers=headers)


def _validation_details(exc: RequestValidationError) -> IndexFoundryError:
    errors = exc.errors()
    first = errors[0] if errors else {}
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "(body)"
    message = f"{loc}: {first.get('msg', 'invalid request')}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return IndexFoundryError(
        message,
        code="CONFIG_INVALID",
        suggestion="Fix the request; the API's openapi.json describes every field",
        details={
            "errors": [
                {"path": ".".join(str(p) for p in e.get("loc", ())), "message": str(e.get("msg"))} for e in errors[:20]
            ]
        },
    )


def install_error_handlers(app: FastAPI) -> None:
    """Map every failure to the error envelope with the right status."""

    @app.exception_handler(HttpProblem)
    async def _problem(request: Request, exc: HttpProblem) -> JSONResponse:
        return error_response(exc.status, exc.error, exc.headers)

    @app.exception_handler(IndexFoundryError)
    async def _indexfoundry(request: Request, exc: IndexFoundryError) -> JSONResponse:
        status = status_for(exc)
        if status >= 500:
            log.error("request failed: %s", exc.one_line())
        headers = {"Retry-After": "5"} if status == 503 else None
        return error_response(status, exc, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, _validation_details(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code: ErrorCode = "NOT_FOUND" if exc.status_code == 404 else "CONFIG_INVALID"
        if exc.status_code == 413:
            code = "REQUEST_TOO_LARGE"
        message = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
        if exc.status_code == 405:
            message = f"method {request.method} is not allowed here"
        error = IndexFoundryError(message, code=code, suggestion="The API's openapi.json lists the endpoints")
        return error_response(exc.status_code, error, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error while answering %s %s", request.method, request.url.path)
        error = IndexFoundryError(
            "internal error", code="INTERNAL_ERROR", suggestion="Retry; if it persists, check the server log"
        )
        return error_response(500, error)


def retry_after_header(seconds: float) -> dict[str, str]:
    """``Retry-After`` in whole seconds (at least 1)."""
    return {"Retry-After": str(max(1, math.ceil(seconds)))}
