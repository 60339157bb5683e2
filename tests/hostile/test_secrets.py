"""A canary API key in the environment never appears in anything a run writes or answers:
artifacts, manifests, logs, error messages, CLI output, run status (what HTTP and MCP return)
— not even when the embedding server reflects the key back in its error response."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from tests.conftest import REPO, SAMPLE_DOCS, folder_config, write_config, write_tree
from tests.hostile.support import everything_written

CANARY = "sk-canary-0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends: nothing listens there


class _Reflector(BaseHTTPRequestHandler):
    """A hostile embedding server: answers every request with an error quoting its headers."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = json.dumps({"error": {"message": f"invalid key: {self.headers.get('Authorization')}"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def reflector() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Reflector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("endpoint", [pytest.param("closed-port", marks=pytest.mark.slow), "reflecting-server"])
def test_a_canary_api_key_never_appears_in_anything_a_failed_embedding_run_writes_or_prints(
    endpoint: str, reflector: str, tmp_path: Path, runs_dir: Path
):
    base_url = f"http://127.0.0.1:{_closed_port()}/v1" if endpoint == "closed-port" else reflector
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    config = folder_config(
        docs,
        extract={"workers": 0},
        index={
            "embedding_model": "openai:text-embedding-3-small",
            "base_url": base_url,
            "api_key_env": "HOSTILE_CANARY_KEY",
            "timeout_ms": 5000,
            "retry_config": {"max_retries": 0, "backoff_ms": 0},
        },
    )
    config_path = write_config(tmp_path / "config.yaml", config)
    env = {**os.environ, "HOSTILE_CANARY_KEY": CANARY, "INDEXFOUNDRY_RUNS_DIR": str(runs_dir)}
    proc = subprocess.run(
        [sys.executable, "-m", "indexfoundry", "pipeline", "run", str(config_path), "--json"],
        capture_output=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert CANARY.encode() not in output
    result = json.loads(proc.stdout.decode())
    assert result["status"] == "failed"
    run_id = result["run_id"]
    status = api.status(run_id, runs_dir=runs_dir)
    assert [e.code for e in status.errors][-1] == "EMBED_ERROR"
    assert CANARY not in status.model_dump_json()  # what run_status returns over HTTP and MCP
    cli_status = subprocess.run(
        [sys.executable, "-m", "indexfoundry", "run", "status", run_id, "--json"],
        capture_output=True,
        timeout=120,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert CANARY.encode() not in cli_status.stdout + cli_status.stderr
    written = list(everything_written(runs_dir))
    assert any(path.name == "errors.ndjson" for path, _ in written)
    for path, data in written:
        assert CANARY.encode() not in data, f"{path} holds the API key"
        assert CANARY[3:].encode() not in data, f"{path} holds the API key without its prefix"


def test_a_canary_api_key_used_by_a_served_run_never_appears_in_an_http_response_or_the_run(
    tmp_path: Path, runs_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    from tests.embedding_server import EmbeddingServer
    from tests.integration.http_support import live_server

    monkeypatch.setenv("HOSTILE_CANARY_KEY", CANARY)
    embeddings = EmbeddingServer().start()
    try:
        docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
        config = folder_config(
            docs,
            extract={"workers": 0},
            index={
                "embedding_model": "openai:test-embed",
                "base_url": embeddings.base_url,
                "api_key_env": "HOSTILE_CANARY_KEY",
                "timeout_ms": 5000,
                "retry_config": {"max_retries": 0, "backoff_ms": 0},
            },
        )
        run = api.pipeline_run(config, runs_dir=runs_dir)
        assert run.status == "completed"
        assert embeddings.requests[0].headers["authorization"] == f"Bearer {CANARY}"  # the key was really used
        bodies: list[bytes] = []
        with live_server(runs_dir, run.run_id) as server, server.client() as client:
            for mode in ("semantic", "keyword", "hybrid"):
                response = client.post(f"/search/{mode}", json={"query": "install with pip", "top_k": 3})
                assert response.status_code == 200
                bodies.append(response.content)
            hit = json.loads(bodies[0])["results"][0]
            for path in ("/health", "/stats", f"/chunks/{hit['chunk_id']}", f"/documents/{hit['doc_id']}"):
                bodies.append(client.get(path).content)
            embeddings.stop()  # the query embedder now fails: its error must not carry the key either
            failed = client.post("/search/semantic", json={"query": "theme colours", "top_k": 3})
            assert failed.status_code >= 400
            assert failed.json()["error"]["code"] == "EMBED_ERROR"
            bodies.append(failed.content)
        for body in bodies:
            assert CANARY.encode() not in body
        for path, data in everything_written(runs_dir):
            assert CANARY.encode() not in data, f"{path} holds the API key"
    finally:
        embeddings.stop()


@pytest.mark.slow
def test_a_canary_api_key_never_appears_in_mcp_tool_results_of_a_failed_embedding_run(tmp_path: Path):
    import anyio

    from tests.integration.mcp_support import server_env, stdio_session

    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    runs = tmp_path / "runs"
    endpoint = f"http://127.0.0.1:{_closed_port()}/v1"
    # The operator names the endpoint and the key variable; the agent names the connection.
    connections = tmp_path / "connections.yaml"
    team = {"model": "openai:text-embedding-3-small", "base_url": endpoint, "api_key_env": "HOSTILE_CANARY_KEY"}
    team |= {"timeout_ms": 5000, "retry_config": {"max_retries": 0, "backoff_ms": 0}}
    connections.write_text(json.dumps({"embeddings": {"team": team}}), encoding="utf-8")
    config = {**folder_config(docs), "index": {"embedding_connection": "team"}}

    async def main() -> list[str]:
        env = server_env(HOSTILE_CANARY_KEY=CANARY)
        args = ("--runs-dir", str(runs), "--root", str(tmp_path), "--connections", str(connections))
        async with stdio_session(*args, cwd=tmp_path, env=env) as session:
            run = await session.call_tool("indexfoundry_pipeline_run", config)
            answers = [run.model_dump_json()]
            listed = await session.call_tool("indexfoundry_run_list", {})
            answers.append(listed.model_dump_json())
            for run_dir in sorted(p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")):
                status = await session.call_tool("indexfoundry_run_status", {"run_id": run_dir.name})
                answers.append(status.model_dump_json())
            return answers

    answers = anyio.run(main)
    assert len(answers) >= 3  # the run was created and its status answered
    assert any("EMBED_ERROR" in answer for answer in answers)
    for answer in answers:
        assert CANARY not in answer
    for path, data in everything_written(tmp_path):
        if path.parts[-1] not in ("config.yaml", "connections.yaml"):
            assert CANARY.encode() not in data, f"{path} holds the API key"
