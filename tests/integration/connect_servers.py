"""Real HTTP servers on 127.0.0.1 for the connect tests, started and stopped by the tests.

``serve_site`` replicates ``../shared/corpora/html/serve_site.py``: a static tree whose real
``sitemap.xml`` has its origin rewritten to the local address (plus ``sitemap.xml.gz`` and a
``robots.txt`` advertising it). ``serve_script`` answers each path with a scripted behaviour
(stall, endless body, redirect, flaky 503 ...). Every request is recorded, so a test can prove
what was (and was not) asked of the server.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Served:
    """A running server: its base URL and what it was asked."""

    base: str
    port: int
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def statuses(self, path: str) -> list[int]:
        return [r["status"] for r in self.requests if r["path"] == path]

    def bodies_sent(self, suffix: str = ".html") -> int:
        return sum(1 for r in self.requests if r["status"] == 200 and r["path"].endswith(suffix))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


@contextmanager
def _run(handler: Callable[..., http.server.BaseHTTPRequestHandler], served: Served) -> Iterator[None]:
    server = _Server(("127.0.0.1", served.port), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield
    finally:
        served.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _record(handler: http.server.BaseHTTPRequestHandler, served: Served, code: int | str) -> None:
    served.requests.append(
        {
            "path": handler.path.split("?")[0],
            "status": int(code) if str(code).isdigit() else code,
            "headers": {k.lower(): v for k, v in handler.headers.items()},
        }
    )


@contextmanager
def serve_site(root: Path, origin: str = "https://www.mkdocs.org", sitemap: bool = True) -> Iterator[Served]:
    """Serve a built docs site with its sitemap rewritten to this server's address.

    With ``sitemap=False`` the site has neither a sitemap nor a robots.txt (both 404), so
    only following links can find its pages; its pages are served with ``origin`` rewritten
    to this server's address (as the site is at its real origin: its canonical links are).
    """
    port = _free_port()
    served = Served(base=f"http://127.0.0.1:{port}", port=port)

    def sitemap_bytes() -> bytes:
        return (root / "sitemap.xml").read_text(encoding="utf-8").replace(origin.rstrip("/"), served.base).encode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path in ("/sitemap.xml", "/sitemap.xml.gz", "/robots.txt"):
                if not sitemap:
                    self.send_error(404)
                    return
                if path == "/robots.txt":
                    data = f"User-agent: *\nAllow: /\nSitemap: {served.base}/sitemap.xml\n".encode()
                    ctype = "text/plain"
                else:
                    data, ctype = sitemap_bytes(), "application/xml"
                    if path.endswith(".gz"):
                        data, ctype = gzip.compress(data, mtime=0), "application/gzip"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if not sitemap and path.endswith((".html", "/")):
                # A mirror at its own origin: the pages' absolute links (rel=canonical) name it.
                target = Path(self.translate_path(path))
                target = target / "index.html" if target.is_dir() else target
                if target.is_file():
                    data = target.read_bytes().replace(origin.rstrip("/").encode(), served.base.encode())
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
            super().do_GET()

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            _record(self, served, code)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    with _run(functools.partial(Handler, directory=str(root)), served):
        yield served


Behaviour = Callable[[http.server.BaseHTTPRequestHandler, Served, int], None]


@contextmanager
def serve_script(routes: dict[str, Behaviour]) -> Iterator[Served]:
    """Serve scripted behaviours; the int passed to a behaviour is how often its path was asked."""
    port = _free_port()
    served = Served(base=f"http://127.0.0.1:{port}", port=port)
    counts: dict[str, int] = {}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            with lock:
                counts[path] = counts.get(path, 0) + 1
                count = counts[path]
            behaviour = routes.get(path)
            if behaviour is None:
                send(self, 404, b"not found")
                return
            try:
                behaviour(self, served, count)
            except (BrokenPipeError, ConnectionResetError):
                return

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            _record(self, served, code)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    with _run(Handler, served):
        yield served


def send(
    handler: http.server.BaseHTTPRequestHandler,
    status: int,
    body: bytes = b"",
    content_type: str = "text/plain",
    headers: dict[str, str] | None = None,
) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


def body(data: bytes, content_type: str = "text/plain", headers: dict[str, str] | None = None) -> Behaviour:
    """A 200 with ``data``; with an ``ETag`` header, a matching ``If-None-Match`` gets a 304."""
    etag = (headers or {}).get("ETag")

    def behaviour(handler: http.server.BaseHTTPRequestHandler, served: Served, count: int) -> None:
        if etag is not None and handler.headers.get("If-None-Match") == etag:
            send(handler, 304, b"", content_type, headers)
            return
        send(handler, 200, data, content_type, headers)

    return behaviour


def status(code: int, headers: dict[str, str] | None = None) -> Behaviour:
    def behaviour(handler: http.server.BaseHTTPRequestHandler, served: Served, count: int) -> None:
        send(handler, code, b"", headers=headers)

    return behaviour


def redirect(location: str, code: int = 302) -> Behaviour:
    return status(code, {"Location": location})


def stall() -> Behaviour:
    """Read the request, then answer nothing until the server stops."""

    def behaviour(handler: http.server.BaseHTTPRequestHandler, served: Served, count: int) -> None:
        served.release.wait(30)

    return behaviour


def endless(chunk: bytes = b"x" * 65536) -> Behaviour:
    """A 200 whose body never ends (no Content-Length; stops when the client hangs up)."""

    def behaviour(handler: http.server.BaseHTTPRequestHandler, served: Served, count: int) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.end_headers()
        while not served.release.is_set():
            handler.wfile.write(chunk)

    return behaviour


def flaky(failures: int, then: Behaviour, code: int = 503, retry_after: str | None = None) -> Behaviour:
    """Answer ``code`` for the first ``failures`` requests, then behave as ``then``."""

    def behaviour(handler: http.server.BaseHTTPRequestHandler, served: Served, count: int) -> None:
        if count <= failures:
            send(handler, code, b"busy", headers={"Retry-After": retry_after} if retry_after else None)
        else:
            then(handler, served, count)

    return behaviour
