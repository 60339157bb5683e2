"""Remote Qdrant ``{url, api_key_env}`` and Milvus ``{uri, token_env}``: no server binary of
either runs here, so these tests cover what can be checked without one — the real clients'
network paths against 127.0.0.1: a server answering 503 is retried with backoff and then a
recoverable ``DB_ERROR``; a 4xx answer is not retried; a Milvus server that cannot be reached
is retried, then a recoverable ``DB_ERROR``. (The stores' behaviour on data is tested in their
embedded modes by the contract suite, through the same code.)"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import VectorDbConfig
from tests.hostile.test_vector_store_failure import _free_port


class Answering:
    """An HTTP server on 127.0.0.1 answering every request with one status; counts requests."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _answer(self) -> None:
                outer.requests.append(f"{self.command} {self.path} key={self.headers.get('api-key')}")
                body = json.dumps({"status": {"error": "busy"}, "time": 0}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def busy() -> Iterator[Answering]:
    server = Answering(503)
    yield server
    server.close()


@pytest.fixture
def refusing() -> Iterator[Answering]:
    server = Answering(400)
    yield server
    server.close()


# qdrant-client warns that an API key goes over plain http: the test server is on loopback.
INSECURE_OK = pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection:UserWarning")


def _qdrant(port: int) -> Any:
    pytest.importorskip("qdrant_client")
    from indexfoundry.backends.stores.qdrant import QdrantStore

    config = VectorDbConfig(
        provider="qdrant",
        collection="remote",
        connection={"url": f"http://127.0.0.1:{port}", "api_key_env": "QDRANT_KEY", "max_retries": 2, "backoff_ms": 10},
    )
    return QdrantStore(config, None)  # type: ignore[arg-type]


@INSECURE_OK
def test_a_qdrant_server_answering_503_is_retried_then_a_recoverable_db_error(
    busy: Answering, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("QDRANT_KEY", "qdrant-canary")
    store = _qdrant(busy.port)
    try:
        with pytest.raises(IndexFoundryError) as failed:
            store.ensure_collection("hash:16", 16)
    finally:
        store.close()
    assert failed.value.code == "DB_ERROR" and failed.value.recoverable is True
    assert len(busy.requests) == 3  # the first attempt and two retries
    assert all("key=qdrant-canary" in r for r in busy.requests)
    assert "qdrant-canary" not in json.dumps(failed.value.to_dict())


@INSECURE_OK
def test_a_qdrant_server_refusing_a_request_is_not_retried(refusing: Answering, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("QDRANT_KEY", "k")
    store = _qdrant(refusing.port)
    try:
        with pytest.raises(IndexFoundryError) as failed:
            store.count()
    finally:
        store.close()
    assert failed.value.code == "DB_ERROR" and failed.value.recoverable is False
    assert len(refusing.requests) == 1


def test_an_unreachable_milvus_server_is_retried_then_a_recoverable_db_error(monkeypatch: pytest.MonkeyPatch):
    pymilvus = pytest.importorskip("pymilvus")
    from indexfoundry.backends.stores.milvus import MilvusStore

    attempts: list[dict[str, Any]] = []
    real = pymilvus.MilvusClient

    def counting(**kwargs: Any) -> Any:
        attempts.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(pymilvus, "MilvusClient", counting)
    monkeypatch.setenv("MILVUS_TOKEN", "milvus-canary")
    config = VectorDbConfig(
        provider="milvus",
        collection="remote",
        connection={
            "uri": f"http://127.0.0.1:{_free_port()}",
            "token_env": "MILVUS_TOKEN",
            "max_retries": 1,
            "backoff_ms": 10,
        },
    )
    with pytest.raises(IndexFoundryError) as failed:
        MilvusStore(config, None)  # type: ignore[arg-type]
    assert failed.value.code == "DB_ERROR" and failed.value.recoverable is True
    assert len(attempts) == 2 and attempts[0]["token"] == "milvus-canary"
    assert "milvus-canary" not in json.dumps(failed.value.to_dict())
