"""Request body size limit answering 413 with the API's JSON error shape.

(FastAPI's own ``max_body_size`` answers a plain-text 413 whenever Content-Length is too
large, which would break the one error shape every client relies on.)
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.http.errors import error_response


class BodyTooLarge(HTTPException):
    """Raised while reading a body that grows past the limit; the 413 handler answers it."""

    def __init__(self) -> None:
        super().__init__(status_code=413, detail="request body too large")


def too_large_error(limit: int) -> IndexFoundryError:
    return IndexFoundryError(
        f"request body is larger than {limit} bytes",
        code="REQUEST_TOO_LARGE",
        suggestion="Send a shorter query or fewer filters",
    )


class BodyLimitMiddleware:
    """Refuse bodies over ``limit`` bytes: by Content-Length up front, else while streaming."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    await error_response(413, too_large_error(self.limit))(scope, receive, send)
                    return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        await self.app(scope, limited_receive, send)
