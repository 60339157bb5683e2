"""Request log: one ndjson line per request in the served run's ``logs/requests.ndjson``.

Lines hold the method, path, status, duration, client address and key label — never the
query text, the body or the key itself. Every answer gets an ``X-Request-ID`` header (the id
the log line carries) and ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import uuid6
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from indexfoundry.surfaces.http.holder import RunHolder

log = logging.getLogger("indexfoundry.http")


class RequestLogMiddleware:
    """Pure ASGI middleware (no body buffering) that logs each HTTP request once it is answered."""

    def __init__(self, app: ASGIApp, holder: RunHolder, enabled: bool = True) -> None:
        self.app = app
        self.holder = holder
        self.enabled = enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = str(uuid6.uuid7())
        started = time.perf_counter()
        logged = False

        async def send_wrapper(message: Message) -> None:
            nonlocal logged
            if message["type"] == "http.response.start":
                headers: list[Any] = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
                # Logged when the answer starts, so the line exists before the client has the answer.
                if self.enabled:
                    self._write(scope, request_id, int(message["status"]), time.perf_counter() - started)
                logged = True
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            if self.enabled and not logged:
                self._write(scope, request_id, 500, time.perf_counter() - started)

    def _write(self, scope: Scope, request_id: str, status: int, seconds: float) -> None:
        run = self.holder.current
        if run is None:
            return
        state = scope.get("state") or {}
        client = scope.get("client")
        line = {
            "request_id": request_id,
            "method": scope.get("method"),
            "path": scope.get("path"),
            "status": status,
            "duration_ms": round(seconds * 1000, 3),
            "client": client[0] if client else None,
            "key": state.get("principal"),
            "run_id": run.id,
        }
        try:
            run.log_request(line)
        except OSError as exc:  # a full disk must not take the API down
            log.warning("cannot write the request log: %s", exc)
