"""An MCP client is an untrusted user: its arguments can narrow the server operator's policy,
never widen it (issue: the agent as attacker).

Two live holes are rebuilt here as attacks through the real server and the official SDK client:
a URL-looking host path (``x://../../etc``) that once skipped the roots check, and an agent that
chose which environment variable the server sent as an API key, to a listener of its own. The
unit-level cases try the variants of each class (other schemes and spellings, every ``*_env``
field, every endpoint-like field).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.mcp.security import AgentPolicy, Roots, guard_arguments, is_url
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree

SECRET = "sk-unrelated-secret-5f6e7d8c9b0a"
RUN = "01900000-0000-7000-8000-000000000001"


def code_of(arguments: dict[str, Any], roots: Roots, runs_dir: Path, policy: AgentPolicy | None = None) -> str:
    with pytest.raises(IndexFoundryError) as info:
        guard_arguments(arguments, roots, runs_dir, policy)
    return info.value.code


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    (tmp_path / "root" / "docs").mkdir(parents=True)
    return Roots([tmp_path / "root"])


URL_LOOKING_PATHS = [
    "x://../../../../../../../../etc",
    "file:///etc",
    "http://../../../../etc",
    "a+b.c-d://../../../../etc",
    "X://..\\..\\..\\etc",
    "file:/etc",
    "https://example.org/../../etc",
]


@pytest.mark.parametrize("value", URL_LOOKING_PATHS)
def test_a_url_looking_host_path_is_refused_not_skipped(value: str, roots: Roots, tmp_path: Path):
    runs = tmp_path / "runs"
    cases = [
        {"path": value, "glob": "passwd"},
        {"connect": {"sources": [{"type": "folder", "path": value, "glob": "passwd"}]}},
        {"index": {"vector_db": {"provider": "chroma", "connection": {"path": value}}}},
        {"index": {"vector_db": {"provider": "local", "connection": {"path": value}}}},
        {"serve": {"api_key_file": value}},
        {"folder": value},
        {"output_dir": value},
    ]
    for arguments in cases:
        assert code_of(arguments, roots, runs) == "NOT_FOUND", arguments


@pytest.mark.parametrize("value", URL_LOOKING_PATHS)
def test_a_url_looking_run_path_is_refused(value: str, roots: Roots, tmp_path: Path):
    assert code_of({"run_id": RUN, "chunks_path": value}, roots, tmp_path / "runs") == "NOT_FOUND"
    assert code_of({"pdf_path": value}, roots, tmp_path / "runs") == "NOT_FOUND"


def test_only_the_fields_that_take_a_url_take_one_and_only_http(roots: Roots, tmp_path: Path):
    runs = tmp_path / "runs"
    ok = guard_arguments({"source": "https://example.org/a.pdf", "url": "http://example.org/"}, roots, runs)
    assert ok["source"] == "https://example.org/a.pdf"
    for arguments in (
        {"source": "x://../../etc/passwd"},
        {"source": "file:///etc/passwd"},
        {"url": "file:///etc/passwd"},
        {"url": "gopher://127.0.0.1:6379/_FLUSHALL"},
        {"sitemap_url": "ftp://example.org/sitemap.xml"},
        {"connect": {"sources": [{"type": "sitemap", "url": "javascript:alert(1)"}]}},
        {"connect": {"sources": [{"type": "pdf", "source": "x://../../../../etc/passwd"}]}},
    ):
        assert code_of(arguments, roots, runs) == "DOMAIN_BLOCKED", arguments


def test_a_windows_drive_letter_is_a_path_not_a_url():
    assert not is_url("C:\\docs")
    assert is_url("x://..")
    assert is_url("file:/etc")


ENV_FIELDS = [
    {"index": {"api_key_env": "UNRELATED_SECRET"}},
    {"model": {"provider": "openai", "api_key_env": "UNRELATED_SECRET"}},
    {"index": {"vector_db": {"connection": {"path": "docs", "api_key_env": "UNRELATED_SECRET"}}}},
    {"connection": {"path": "docs", "token_env": "UNRELATED_SECRET"}},
    {"connection": {"path": "docs", "dsn_env": "UNRELATED_SECRET"}},
    {"extract": {"pdf_password_env": "UNRELATED_SECRET"}},
    {"serve": {"api_keys_env": "UNRELATED_SECRET"}},
    {"reranker": {"api_key_env": "UNRELATED_SECRET"}},
]


@pytest.mark.parametrize("arguments", ENV_FIELDS)
def test_an_agent_cannot_choose_which_environment_variable_is_read(
    arguments: dict[str, Any], roots: Roots, tmp_path: Path
):
    runs = tmp_path / "runs"
    assert code_of(arguments, roots, runs) == "CONFIG_INVALID"
    # ... unless the operator allowed exactly that name.
    guard_arguments(arguments, roots, runs, AgentPolicy().with_env(["UNRELATED_SECRET"]))


def test_the_documented_key_variables_are_allowed_by_default(roots: Roots, tmp_path: Path):
    for name in ("EMBEDDING_API_KEY", "RERANK_API_KEY", "PDF_PASSWORD", "INDEXFOUNDRY_API_KEYS"):
        arguments = {"index": {"api_key_env": name}}
        assert guard_arguments(arguments, roots, tmp_path / "runs") == arguments


ENDPOINTS = [
    {"index": {"base_url": "http://127.0.0.1:9/v1"}},
    {"index": {"base_url": "https://attacker.example/v1"}},
    {"model": {"base_url": "http://169.254.169.254/latest"}},
    {"reranker": {"base_url": "http://10.0.0.1/rerank"}},
    {"index": {"vector_db": {"provider": "chroma", "connection": {"host": "127.0.0.1", "port": 6379}}}},
    {"index": {"vector_db": {"provider": "qdrant", "connection": {"url": "http://internal:6333"}}}},
    {"index": {"vector_db": {"provider": "milvus", "connection": {"uri": "http://127.0.0.1:19530"}}}},
    {"connection": {"dsn": "postgresql://app@db.internal:5432/app"}},
    {"connection": {"host": "[::1]", "port": 8000}},
    # Weaviate's gRPC address, with and without a scheme.
    {"index": {"vector_db": {"provider": "weaviate", "connection": {"grpc_url": "http://169.254.169.254:50051"}}}},
    {"connection": {"path": "docs", "grpc_url": "10.0.0.7:50051"}},
]


@pytest.mark.parametrize("arguments", ENDPOINTS)
def test_an_agent_cannot_point_a_backend_at_a_server_the_operator_did_not_allow(
    arguments: dict[str, Any], roots: Roots, tmp_path: Path
):
    assert code_of(arguments, roots, tmp_path / "runs") == "DOMAIN_BLOCKED"


def test_an_allowed_endpoint_matches_by_scheme_host_port_and_path_prefix(roots: Roots, tmp_path: Path):
    runs = tmp_path / "runs"
    policy = AgentPolicy(allowed_endpoints=("http://127.0.0.1:11434/v1", "http://chroma.internal:8000"))
    guard_arguments({"index": {"base_url": "http://127.0.0.1:11434/v1"}}, roots, runs, policy)
    guard_arguments({"index": {"base_url": "http://127.0.0.1:11434/v1/embeddings"}}, roots, runs, policy)
    guard_arguments({"connection": {"host": "chroma.internal", "port": 8000}}, roots, runs, policy)
    for base_url in (
        "http://127.0.0.1:11435/v1",
        "https://127.0.0.1:11434/v1",
        "http://127.0.0.1:11434/v10",
        "http://127.0.0.1.attacker.example:11434/v1",
        "http://user@127.0.0.2:11434/v1",
    ):
        assert code_of({"index": {"base_url": base_url}}, roots, runs, policy) == "DOMAIN_BLOCKED", base_url


def test_an_agent_cannot_open_private_networks_but_may_narrow(roots: Roots, tmp_path: Path):
    runs = tmp_path / "runs"
    source = {"type": "url", "url": "http://127.0.0.1:8000/"}
    assert code_of({"connect": {"sources": [source], "allow_private_networks": True}}, roots, runs) == "DOMAIN_BLOCKED"
    assert (
        code_of({"connect": {"sources": [source], "allowed_private_hosts": ["127.0.0.1"]}}, roots, runs)
        == "DOMAIN_BLOCKED"
    )
    assert code_of({"security": {"allow_private_networks": True}}, roots, runs) == "DOMAIN_BLOCKED"
    # Without opt-ins, the connect block gets the server's (strict) policy written in.
    out = guard_arguments({"connect": {"sources": [source]}}, roots, runs)
    assert out["connect"]["allow_private_networks"] is False
    # The operator allowed one host: the agent inherits it, may name it, may not name another.
    policy = AgentPolicy(allowed_private_hosts=("docs.internal:8080",))
    out = guard_arguments({"connect": {"sources": [source]}}, roots, runs, policy)
    assert out["connect"]["allowed_private_hosts"] == ["docs.internal:8080"]
    guard_arguments(
        {"connect": {"sources": [source], "allowed_private_hosts": ["docs.internal:8080"]}}, roots, runs, policy
    )
    bad = {"connect": {"sources": [source], "allowed_private_hosts": ["docs.internal:22"]}}
    assert code_of(bad, roots, runs, policy) == "DOMAIN_BLOCKED"
    narrowed = guard_arguments(
        {"connect": {"sources": [source], "allow_private_networks": False, "allowed_private_hosts": []}},
        roots,
        runs,
        AgentPolicy(allow_private_networks=True),
    )
    assert narrowed["connect"]["allow_private_networks"] is False


def test_an_agent_binds_servers_to_loopback_only(roots: Roots, tmp_path: Path):
    runs = tmp_path / "runs"
    guard_arguments({"host": "127.0.0.1", "port": 8123}, roots, runs)
    for host in ("0.0.0.0", "::", "192.168.1.10"):
        assert code_of({"host": host}, roots, runs) == "DOMAIN_BLOCKED"
        assert code_of({"serve": {"host": host}}, roots, runs) == "DOMAIN_BLOCKED"
    guard_arguments({"host": "0.0.0.0"}, roots, runs, AgentPolicy(allowed_bind_hosts=frozenset({"0.0.0.0"})))


def test_header_names_and_url_path_prefixes_are_not_mistaken_for_hosts_or_paths(roots: Roots, tmp_path: Path):
    arguments = {
        "url": "https://example.org/",
        "headers": {"host": "example.org", "X-Path": "/etc"},
        "serve": {"api_info": {"base_path": "/api/v1"}},
    }
    assert guard_arguments(arguments, roots, tmp_path / "runs") == arguments


# ------------------------------------------------------------------ the attacks, end to end


class _Listener:
    """A TCP listener standing for the agent's own server: counts every connection it gets."""

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
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(65536))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    server = _Listener()
    try:
        yield server
    finally:
        server.close()


def _structured(result: Any) -> dict[str, Any]:
    return dict(result.structured_content or {})


def test_an_agent_reads_no_host_file_through_a_url_looking_folder_path(tmp_path: Path):
    from tests.integration.mcp_support import stdio_session

    root = write_tree(tmp_path / "root", SAMPLE_DOCS)
    runs = tmp_path / "runs"

    async def main() -> list[Any]:
        args = ("--runs-dir", str(runs), "--root", str(root))
        async with stdio_session(*args, cwd=tmp_path) as session:
            hostile = "x://../../../../../../../../etc"
            connect = await session.call_tool("indexfoundry_connect_folder", {"path": hostile, "glob": "passwd"})
            config = folder_config(root)
            config["connect"]["sources"] = [{"type": "folder", "path": hostile, "glob": "passwd"}]
            run = await session.call_tool("indexfoundry_pipeline_run", config)
            store = folder_config(root, index={"embedding_model": "hash"})
            store["index"]["vector_db"] = {
                "provider": "local",
                "connection": {"path": f"x://../../../{tmp_path.name}-x"},
            }
            written = await session.call_tool("indexfoundry_pipeline_run", store)
            search = await session.call_tool("search_docs", {"query": "root:x:0:0"})
            return [connect, run, written, search]

    connect, run, written, search = anyio.run(main)
    for result in (connect, run, written):
        assert result.is_error
        assert _structured(result)["error"]["code"] == "NOT_FOUND"
    assert "root:x:0:0" not in search.model_dump_json()
    assert not (tmp_path.parent / f"{tmp_path.name}-x").exists()
    assert not runs.exists() or not any(p.is_dir() and not p.name.startswith(".") for p in runs.iterdir())


def test_an_agent_cannot_make_the_server_send_a_secret_to_its_listener(tmp_path: Path, listener: _Listener):
    from tests.integration.mcp_support import server_env, stdio_session

    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    runs = tmp_path / "runs"
    url = f"http://127.0.0.1:{listener.port}"
    attacks: list[dict[str, Any]] = []
    # 1. an unrelated secret as the embedding key, sent to the agent's listener
    attacks.append(
        folder_config(
            docs,
            index={
                "embedding_model": "openai:text-embedding-3-small",
                "base_url": f"{url}/v1",
                "api_key_env": "UNRELATED_SECRET",
                "retry_config": {"max_retries": 0, "backoff_ms": 0},
            },
        )
    )
    # 1b. an unrelated secret as the key of the provider's own endpoint
    attacks.append(
        folder_config(
            docs, index={"embedding_model": "openai:text-embedding-3-small", "api_key_env": "UNRELATED_SECRET"}
        )
    )
    # 2. a documented key name, but the agent's endpoint
    attacks.append(
        folder_config(docs, index={"embedding_model": "openai:text-embedding-3-small", "base_url": f"{url}/v1"})
    )
    # 3. the store pointed at the listener
    store = folder_config(docs, index={"embedding_model": "hash"})
    store["index"]["vector_db"] = {"provider": "chroma", "connection": {"host": "127.0.0.1", "port": listener.port}}
    attacks.append(store)
    # 4. opening private networks to fetch the listener as a source
    fetch = folder_config(docs)
    fetch["connect"] = {"sources": [{"type": "url", "url": f"{url}/page"}], "allow_private_networks": True}
    attacks.append(fetch)
    # 5. the same through allowed_private_hosts
    fetch_host = folder_config(docs)
    fetch_host["connect"] = {
        "sources": [{"type": "url", "url": f"{url}/page"}],
        "allowed_private_hosts": [f"127.0.0.1:{listener.port}"],
    }
    attacks.append(fetch_host)

    async def main() -> list[Any]:
        env = server_env(UNRELATED_SECRET=SECRET, EMBEDDING_API_KEY=SECRET)
        args = ("--runs-dir", str(runs), "--root", str(tmp_path))
        async with stdio_session(*args, cwd=tmp_path, env=env) as session:
            return [await session.call_tool("indexfoundry_pipeline_run", attack) for attack in attacks]

    results = anyio.run(main)
    codes = [_structured(r).get("error", {}).get("code") for r in results]
    assert all(r.is_error for r in results), codes
    assert codes[0] in ("CONFIG_INVALID", "DOMAIN_BLOCKED")  # both the key name and the endpoint are refused
    assert codes[1:6] == ["CONFIG_INVALID", "DOMAIN_BLOCKED", "DOMAIN_BLOCKED", "DOMAIN_BLOCKED", "DOMAIN_BLOCKED"]
    assert listener.received == [], listener.received
    for result in results:
        assert SECRET not in result.model_dump_json()


@pytest.mark.slow
def test_the_operator_can_allow_a_private_host_and_the_agent_inherits_it(tmp_path: Path):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tests.integration.mcp_support import stdio_session

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html><head><title>Intranet</title></head><body><main><h1>Intranet</h1><p>" + b"ok " * 80
            body += b"</p></main></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    runs = tmp_path / "runs"
    config = folder_config(tmp_path, index={"embedding_model": "hash"})
    config["connect"] = {"sources": [{"type": "url", "url": f"http://127.0.0.1:{port}/page"}]}

    async def main() -> Any:
        args = ("--runs-dir", str(runs), "--root", str(tmp_path), "--allow-private-host", f"127.0.0.1:{port}")
        async with stdio_session(*args, cwd=tmp_path) as session:
            return await session.call_tool("indexfoundry_pipeline_run", config)

    try:
        result = anyio.run(main)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert not result.is_error, result.model_dump_json()
    assert _structured(result)["status"] == "completed"


MODEL_SPECS = [
    ({"reranker": {"enabled": True, "model": "http:http://127.0.0.1:9/rerank"}}, "DOMAIN_BLOCKED"),
    ({"retrieval": {"reranker": {"model": "http:https://attacker.example"}}}, "DOMAIN_BLOCKED"),
    ({"reranker": {"model": "cross-encoder:/etc"}}, "NOT_FOUND"),
    ({"reranker": {"model": "cross-encoder:x://../../../../etc"}}, "NOT_FOUND"),
    ({"index": {"embedding_model": "sentence-transformers:/root/.cache/evil"}}, "NOT_FOUND"),
    ({"model": {"provider": "sentence-transformers", "model_name": "../../../../tmp/evil"}}, "NOT_FOUND"),
    ({"connect": {"sources": [], "headers_env": {"Authorization": "UNRELATED_SECRET"}}}, "CONFIG_INVALID"),
]


@pytest.mark.parametrize(("arguments", "code"), MODEL_SPECS)
def test_model_specs_name_endpoints_and_folders_the_operator_bounds(
    arguments: dict[str, Any], code: str, roots: Roots, tmp_path: Path
):
    assert code_of(arguments, roots, tmp_path / "runs") == code


def test_allowed_model_specs_pass_and_local_folders_are_resolved(roots: Roots, tmp_path: Path):
    runs = tmp_path / "runs"
    policy = AgentPolicy(allowed_endpoints=("http://127.0.0.1:8080",))
    guard_arguments({"reranker": {"model": "http:http://127.0.0.1:8080/rerank"}}, roots, runs, policy)
    out = guard_arguments({"reranker": {"model": "cross-encoder:docs"}}, roots, runs)
    assert out["reranker"]["model"] == f"cross-encoder:{roots.paths[0] / 'docs'}"
    assert guard_arguments({"index": {"embedding_model": "openai:text-embedding-3-small"}}, roots, runs)
    assert guard_arguments({"reranker": {"model": "cohere:rerank-v3.5"}}, roots, runs)
