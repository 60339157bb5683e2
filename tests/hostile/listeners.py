"""Listeners on 127.0.0.1 that record every connection and request, and the canary secrets they look for.

``Recorder`` is an HTTP server: it answers ``GET`` with a small HTML page (with an ETag and the
links in ``links``; ``/sitemap.xml`` lists them), ``POST .../embeddings`` like an OpenAI-compatible embedding API (hash
vectors) and ``POST .../rerank`` like a TEI reranker; it records method, path, headers and body
of every request. ``TcpRecorder`` accepts raw TCP connections (a PostgreSQL client's startup
packet, a gRPC preface) and records the first bytes of each. ``CANARIES`` are the secrets the
environment holds during a hostile test; ``leaks`` says which canary reached a request where it
does not belong.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from indexfoundry.backends.embedding.hashing import hash_embed

# Every secret the server's environment holds in these tests, by variable name.
CANARIES: dict[str, str] = {
    "EMBEDDING_API_KEY": "sk-embedding-canary-7f3a9c",
    "RERANK_API_KEY": "sk-rerank-canary-41d2e8",
    "INDEXFOUNDRY_API_KEYS": "http-key-canary-93b7c1",
    "PDF_PASSWORD": "pdf-password-canary-2c6f04",
    "DOCS_AUTH": "Bearer docs-canary-8e15aa",
    "TEAM_PG_DSN": "postgresql://canary-user@127.0.0.1:1/canary-db",
}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def text(self) -> str:
        head = "\n".join(f"{k}: {v}" for k, v in self.headers.items())
        return f"{self.method} {self.path}\n{head}\n\n{self.body.decode('utf-8', 'replace')}"


class Recorder:
    """An HTTP listener on 127.0.0.1 that records every request (see the module doc)."""

    def __init__(self, dimensions: int = 64) -> None:
        self.requests: list[Request] = []
        self.dimensions = dimensions
        self.links: list[str] = ["/next"]  # the links every page carries
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _record(self) -> Request:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                recorder.requests.append(seen)
                return seen

            def _send(self, status: int, body: bytes, kind: str, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                seen = self._record()
                if seen.path.endswith("robots.txt"):
                    self._send(404, b"", "text/plain")
                    return
                if seen.path.endswith("sitemap.xml"):  # lists the links, absolute ones as they are
                    urls = [link if "://" in link else recorder.url + link for link in recorder.links]
                    locs = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
                    xml = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
                    self._send(200, xml.encode(), "application/xml")
                    return
                words = " ".join(f"{seen.path.strip('/') or 'home'}-word{i}" for i in range(60))
                page = f"<html><head><title>Page {seen.path}</title></head><body><main><h1>Page</h1><p>{words}</p>"
                page += "".join(f'<a href="{link}">more</a>' for link in recorder.links) + "</main></body></html>"
                body = page.encode()
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    self._send(304, b"", "text/html", {"ETag": etag})
                    return
                self._send(200, body, "text/html; charset=utf-8", {"ETag": etag})

            def do_POST(self) -> None:
                seen = self._record()
                try:
                    payload = json.loads(seen.body or b"{}")
                except ValueError:
                    payload = {}
                if seen.path.endswith("/embeddings"):
                    texts = payload.get("input", [])
                    texts = [texts] if isinstance(texts, str) else texts
                    vectors = hash_embed(list(texts), recorder.dimensions)
                    data = [
                        {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                        for i, v in enumerate(vectors)
                    ]
                    answer = {"object": "list", "data": data, "model": payload.get("model", "m"), "usage": {}}
                    self._send(200, json.dumps(answer).encode(), "application/json")
                elif seen.path.endswith("/rerank"):
                    texts = payload.get("texts", [])
                    scores = [{"index": i, "score": 1.0 / (i + 1)} for i in range(len(texts))]
                    self._send(200, json.dumps(scores).encode(), "application/json")
                else:
                    self._send(404, b"{}", "application/json")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


class TcpRecorder:
    """A TCP listener on 127.0.0.1 that records the first bytes of every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.received.append(conn.recv(65536))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


def leaks(requests: list[Request], allowed: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """Each canary found in ``requests`` outside the one header it may travel in.

    ``allowed`` maps a canary's variable to ``(header, value)``: that header may carry exactly
    that value (e.g. ``EMBEDDING_API_KEY: ("authorization", "Bearer sk-…")``); anywhere else —
    another header, the path, the body — the canary is a leak.
    """
    found: list[str] = []
    for request in requests:
        for name, secret in CANARIES.items():
            header, value = (allowed or {}).get(name, ("", ""))
            rest = {k: v for k, v in request.headers.items() if not (k == header and v == value)}
            text = Request(request.method, request.path, rest, request.body).text()
            if secret in text or secret.removeprefix("Bearer ") in text:
                found.append(f"{name} in {request.method} {request.path}")
    return found


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    return dict(CANARIES)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def other() -> Iterator[Recorder]:
    """A second HTTP listener: the port the operator did not name."""
    server = Recorder()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def tcp() -> Iterator[TcpRecorder]:
    server = TcpRecorder()
    try:
        yield server
    finally:
        server.close()
