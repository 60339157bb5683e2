"""A small OpenAI- and Cohere-compatible embeddings server on 127.0.0.1 for the provider tests.

It computes hash embeddings (``indexfoundry``'s ``hash_embed``), so results are checkable, and
can be scripted to fail: ``server.script`` is a list of responses used, one per request, before
normal answers resume (``("429", retry_after)``, ``("503", None)``, ``("malformed", None)``).
Every request is recorded (path, headers, JSON body).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from indexfoundry.backends.embedding.hashing import hash_embed


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class EmbeddingServer:
    dimensions: int = 64
    script: list[tuple[str, Any]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def cohere_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def texts(self) -> list[str]:
        """Every text the server embedded successfully or not, in request order."""
        out: list[str] = []
        for request in self.requests:
            value = request.body.get("input", request.body.get("texts", []))
            out.extend([value] if isinstance(value, str) else value)
        return out

    def start(self) -> EmbeddingServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return None

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if server.script:
                    kind, arg = server.script.pop(0)
                    if kind == "429":
                        self._send(429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": arg})
                        return
                    if kind == "503":
                        self._send(503, {"error": {"message": "overloaded", "type": "server_error"}})
                        return
                    if kind == "malformed":
                        self._send(200, {"object": "list", "data": [{"object": "embedding", "index": 0}]})
                        return
                if self.path.rstrip("/") == "/v1/embeddings":
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    dims = int(body.get("dimensions") or server.dimensions)
                    vectors = hash_embed(texts, dims)
                    data = [
                        {"object": "embedding", "index": i, "embedding": [float(x) for x in vectors[i]]}
                        for i in range(len(texts))
                    ]
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": data,
                            "model": body.get("model"),
                            "usage": {"prompt_tokens": 1, "total_tokens": 1},
                        },
                    )
                    return
                if self.path.rstrip("/") == "/v2/embed":
                    texts = body["texts"]
                    dims = int(body.get("output_dimension") or server.dimensions)
                    vectors = hash_embed(texts, dims)
                    self._send(
                        200,
                        {
                            "id": "test",
                            "embeddings": {"float": [[float(x) for x in v] for v in vectors]},
                            "texts": texts,
                            "response_type": "embeddings_by_type",
                        },
                    )
                    return
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
