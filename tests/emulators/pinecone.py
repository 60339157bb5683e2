"""An in-memory emulator of one Pinecone index's REST data plane, on 127.0.0.1.

Endpoints (the shapes the official ``pinecone`` client sends and decodes): ``POST
/vectors/upsert``, ``POST /query`` (dense vector, ``topK``, ``filter``, ``includeMetadata``,
``includeValues``), ``GET /vectors/fetch``, ``POST /vectors/delete`` (ids or ``deleteAll``),
``GET /vectors/list`` (``prefix``, ``limit``, ``paginationToken``), ``POST
/describe_index_stats``. Every request needs an ``Api-Key`` header (401 otherwise). Cosine
similarity, exact. Metadata filters follow Pinecone's documented operators (``$eq $ne $gt
$gte $lt $lte $in $nin $exists $and $or``); ``$ne`` and ``$nin`` also match a vector without
the field. ``stop()``/``start()`` take the server away and bring it back on the same port
with its data, to test a service that goes away mid-upsert.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$exists":
        return (value is not None) == bool(operand)
    if op == "$ne":
        return value is None or value != operand
    if op == "$nin":
        return value is None or value not in operand
    if value is None:
        return False
    if op == "$eq":
        return bool(value == operand)
    if op == "$in":
        return value in operand
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return bool(
        {"$gt": value > operand, "$gte": value >= operand, "$lt": value < operand, "$lte": value <= operand}[op]
    )


def matches(flt: dict[str, Any] | None, metadata: dict[str, Any]) -> bool:
    if not flt:
        return True
    for key, cond in flt.items():
        if key == "$and":
            ok = all(matches(part, metadata) for part in cond)
        elif key == "$or":
            ok = any(matches(part, metadata) for part in cond)
        elif isinstance(cond, dict):
            ok = all(_compare(metadata.get(key), op, operand) for op, operand in cond.items())
        else:
            ok = _compare(metadata.get(key), "$eq", cond)
        if not ok:
            return False
    return True


class PineconeEmulator:
    """One index: ``dimension`` and the cosine metric, namespaces of {id: (values, metadata)}."""

    def __init__(self, dimension: int, api_key: str = "test-key") -> None:
        self.dimension = dimension
        self.api_key = api_key
        self.namespaces: dict[str, dict[str, tuple[list[float], dict[str, Any]]]] = {}
        self.requests: list[str] = []
        self.lock = threading.Lock()
        self.port = 0
        self.connections: set[Any] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def setup(self) -> None:
                super().setup()
                emulator.connections.add(self.connection)

            def finish(self) -> None:
                emulator.connections.discard(self.connection)
                super().finish()

            def _reply(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                if self.headers.get("Api-Key") != emulator.api_key:
                    self._reply(401, {"error": {"code": "UNAUTHENTICATED", "message": "Invalid API Key"}})
                    return
                emulator.requests.append(f"{method} {url.path}")
                try:
                    status, out = emulator.handle(method, url.path, parse_qs(url.query), body)
                except (KeyError, ValueError, TypeError) as exc:
                    status, out = 400, {"error": {"code": "INVALID_ARGUMENT", "message": str(exc)}}
                self._reply(status, out)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and drop every open (keep-alive) connection, as a dead server would."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for sock in list(self.connections):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    # ------------------------------------------------------------ the API
    def handle(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            if (method, path) == ("POST", "/vectors/upsert"):
                space = self.namespaces.setdefault(body.get("namespace", ""), {})
                for vec in body["vectors"]:
                    values = [float(v) for v in vec["values"]]
                    if len(values) != self.dimension:
                        raise ValueError(
                            f"Vector dimension {len(values)} does not match the dimension of the index {self.dimension}"
                        )
                    space[str(vec["id"])] = (values, dict(vec.get("metadata") or {}))
                return 200, {"upsertedCount": len(body["vectors"])}
            if (method, path) == ("POST", "/query"):
                return 200, self._query(body)
            if (method, path) == ("GET", "/vectors/fetch"):
                ns = query.get("namespace", [""])[0]
                space = self.namespaces.get(ns, {})
                found = {
                    vid: {"id": vid, "values": space[vid][0], "metadata": space[vid][1]}
                    for vid in query.get("ids", [])
                    if vid in space
                }
                return 200, {"vectors": found, "namespace": ns, "usage": {"readUnits": 1}}
            if (method, path) == ("POST", "/vectors/delete"):
                ns = body.get("namespace", "")
                if body.get("deleteAll"):
                    self.namespaces.pop(ns, None)
                else:
                    space = self.namespaces.get(ns, {})
                    for vid in body.get("ids", []):
                        space.pop(vid, None)
                return 200, {}
            if (method, path) == ("GET", "/vectors/list"):
                ns = query.get("namespace", [""])[0]
                prefix = query.get("prefix", [""])[0]
                limit = int(query.get("limit", ["100"])[0])
                after = query.get("paginationToken", [""])[0]
                ids = sorted(v for v in self.namespaces.get(ns, {}) if v.startswith(prefix) and v > after)
                page = ids[:limit]
                out: dict[str, Any] = {"vectors": [{"id": v} for v in page], "namespace": ns, "usage": {"readUnits": 1}}
                if len(ids) > limit:
                    out["pagination"] = {"next": page[-1]}
                return 200, out
            if (method, path) == ("POST", "/describe_index_stats"):
                spaces = {ns: {"vectorCount": len(v)} for ns, v in self.namespaces.items() if v}
                return 200, {
                    "namespaces": spaces,
                    "dimension": self.dimension,
                    "indexFullness": 0.0,
                    "totalVectorCount": sum(s["vectorCount"] for s in spaces.values()),
                    "metric": "cosine",
                    "vectorType": "dense",
                }
            return 404, {"error": {"code": "NOT_FOUND", "message": f"{method} {path}"}}

    def _query(self, body: dict[str, Any]) -> dict[str, Any]:
        ns = body.get("namespace", "")
        space = self.namespaces.get(ns, {})
        q = np.asarray(body["vector"], dtype=np.float64)
        if q.shape != (self.dimension,):
            raise ValueError(f"Query vector dimension {q.shape[0]} does not match the index {self.dimension}")
        kept = [(vid, vals, meta) for vid, (vals, meta) in space.items() if matches(body.get("filter"), meta)]
        scored = []
        for vid, vals, meta in kept:
            v = np.asarray(vals, dtype=np.float64)
            denom = float(np.linalg.norm(v) * np.linalg.norm(q)) or 1.0
            scored.append((float(v @ q) / denom, vid, vals, meta))
        scored.sort(key=lambda s: (-s[0], s[1]))
        matches_out = []
        for score, vid, vals, meta in scored[: int(body["topK"])]:
            hit: dict[str, Any] = {"id": vid, "score": score, "values": vals if body.get("includeValues") else []}
            if body.get("includeMetadata"):
                hit["metadata"] = meta
            matches_out.append(hit)
        return {"matches": matches_out, "namespace": ns, "usage": {"readUnits": 5}}
