"""Seven ways an agent once used an allowed value where the operator did not allow it, each rebuilt
through the real MCP server against listeners on 127.0.0.1 that record every request.

An agent names the operator's connections (``connections.yaml``) and writes no destination or
secret name itself. Each test makes the original call (refused by the agent's schema, with the
key named) and the nearest call the schema does accept (a named connection), and checks what
the listeners received: no request carries a secret outside the header it belongs to, no
connection reaches a port the operator did not name, no run completes with a model outside the
roots, and ten freshness checks cost at most one sweep of the sources.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.models.values import parse_dsn
from tests.conftest import SAMPLE_DOCS, write_tree
from tests.hostile.agents import agent_server, call, code, run_folders, structured
from tests.hostile.listeners import CANARIES, Recorder, TcpRecorder, canaries, leaks, other, recorder, tcp

__all__ = ["canaries", "other", "recorder", "tcp"]  # fixtures

EMBED_KEY = ("authorization", f"Bearer {CANARIES['EMBEDDING_API_KEY']}")
DOCS_KEY = ("authorization", CANARIES["DOCS_AUTH"])


def _refused(result: Any, code_wanted: str, key: str | None = None) -> None:
    assert code(result) == code_wanted, structured(result)
    if key is not None:
        assert key in structured(result)["error"]["message"], structured(result)["error"]


def _docs(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "root" / "docs", SAMPLE_DOCS)


def _folder(**index: Any) -> dict[str, Any]:
    return {"connect": {"sources": [{"type": "folder", "path": "docs", "glob": "**/*.md"}]}, "index": index}


# ------------------------------------------------------------------ 1. headers_env
def test_a_secret_header_never_reaches_a_host_its_fetch_connection_does_not_name(
    tmp_path: Path, canaries: dict[str, str], recorder: Recorder, other: Recorder
):
    """``connect.headers_env: {X-Exfil: EMBEDDING_API_KEY}`` with a url source once sent the key to the page."""
    # The intranet's pages and sitemap link to the agent's host (the same name, another port).
    recorder.links = ["/next", f"{other.url}/linked"]
    intranet = {"allowed_private_hosts": [f"127.0.0.1:{recorder.port}"], "headers_env": {"Authorization": "DOCS_AUTH"}}
    server = agent_server(
        tmp_path / "runs",
        [tmp_path / "root"],
        {"fetch": {"intranet": intranet}},
        allowed_private_hosts=[f"127.0.0.1:{other.port}"],  # the operator lets agents fetch it, without credentials
    )
    exact = {
        "connect": {
            "sources": [{"type": "url", "url": f"{other.url}/page"}],
            "headers_env": {"X-Exfil": "EMBEDDING_API_KEY"},
        },
        "index": {"embedding_model": "hash"},
    }
    named = {
        "connect": {
            "sources": [
                {"type": "url", "url": f"{other.url}/page"},
                {"type": "crawl", "url": f"{recorder.url}/start", "max_depth": 1, "max_pages": 5},
                {"type": "sitemap", "url": f"{recorder.url}/sitemap.xml"},
            ],
            "fetch": "intranet",
        },
        "index": {"embedding_model": "hash"},
    }
    refused, built, header = call(
        server,
        ("indexfoundry_pipeline_run", exact),
        ("indexfoundry_pipeline_run", named),
        (
            "indexfoundry_connect_url",
            {"run_id": "01900000-0000-7000-8000-000000000009", "url": f"{other.url}/x", "headers": {"X-Exfil": "x"}},
        ),
    )
    _refused(refused, "CONFIG_INVALID", "connect.headers_env")
    _refused(header, "CONFIG_INVALID", "headers")
    assert structured(built)["status"] == "completed", structured(built)
    paths = {r.path for r in other.requests}
    assert {"/page", "/linked"} <= paths  # fetched, as the operator allows ...
    assert leaks(other.requests) == []  # ... with no secret
    assert any(r.headers.get("authorization") == DOCS_KEY[1] for r in recorder.requests)  # the intranet got its header
    assert leaks(recorder.requests, {"DOCS_AUTH": DOCS_KEY}) == []


def test_an_agent_call_on_an_operators_run_never_sends_that_runs_headers_env(
    tmp_path: Path, canaries: dict[str, str], recorder: Recorder, other: Recorder
):
    """The run's own headers_env (every host, as an operator may write it) is not sent on an agent's fetch."""
    config = {
        "connect": {
            "sources": [{"type": "url", "url": f"{recorder.url}/a"}],
            "headers_env": {"Authorization": "DOCS_AUTH"},
            "allowed_private_hosts": [f"127.0.0.1:{recorder.port}", f"127.0.0.1:{other.port}"],
        },
        "index": {"embedding_model": "hash"},
    }
    run = api.pipeline_run(config, runs_dir=tmp_path / "runs")
    assert run.status == "completed"
    assert recorder.requests[0].headers["authorization"] == DOCS_KEY[1]  # the operator's own fetch carried it
    server = agent_server(tmp_path / "runs", [tmp_path], allowed_private_hosts=[f"127.0.0.1:{other.port}"])
    (fetched,) = call(server, ("indexfoundry_connect_url", {"run_id": run.run_id, "url": f"{other.url}/agent"}))
    assert code(fetched) is None, structured(fetched)
    assert [r.path for r in other.requests] == ["/agent"]
    assert leaks(other.requests) == []


# ------------------------------------------------------------------ 2. model specs
@pytest.mark.parametrize("pad", [" ", "\t", "\n", " \u00a0"])
def test_no_model_outside_the_roots_and_no_existence_oracle(tmp_path: Path, pad: str):
    """A leading space in ``embedding_model`` once skipped the roots check (``" sentence-transformers:/x"``)."""
    docs = _docs(tmp_path)
    model = tmp_path / "outside" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}", encoding="utf-8")
    missing = tmp_path / "outside" / "missing"
    server = agent_server(tmp_path / "runs", [docs.parent])
    specs = [f"{pad}sentence-transformers:{model}", f"{pad}sentence-transformers:{missing}"]
    results = call(
        server,
        *[("indexfoundry_pipeline_run", _folder(embedding_model=spec)) for spec in specs],
        *[("indexfoundry_pipeline_run", _folder(embedding_model=f"{pad}local")) for _ in range(1)],
        (
            "indexfoundry_index_embed",
            {"run_id": "01900000-0000-7000-8000-000000000009", "model": {"builtin": f"{pad}local"}},
        ),
        (
            "indexfoundry_index_embed",
            {
                "run_id": "01900000-0000-7000-8000-000000000009",
                "model": {"provider": "sentence-transformers", "model_name": str(model)},
            },
        ),
    )
    for result in results:
        _refused(result, "CONFIG_INVALID")
    existing, absent = (structured(r)["error"]["message"] for r in results[:2])
    assert existing.replace(str(model), "X") == absent.replace(str(missing), "X")  # the same answer either way
    assert run_folders(tmp_path / "runs") == []  # no run started, let alone completed


# ------------------------------------------------------------------ 3. pgvector DSN
DSN_TRICKS = [
    "?port={b}",
    "?host=::1&port={b}",
    "?host=/tmp&port={b}",
    "?passfile=/etc/shadow",
    "?host=127.0.0.1&port={b}",
]


@pytest.mark.parametrize("trick", DSN_TRICKS)
def test_an_agent_cannot_move_a_store_connection_with_dsn_parameters(
    tmp_path: Path, canaries: dict[str, str], tcp: TcpRecorder, trick: str
):
    """With ``postgresql://127.0.0.1:A/db`` allowed, ``…/db?port=B`` once passed the guard."""
    allowed = "postgresql://app@127.0.0.1:1/db"
    stores = {"team-pg": {"provider": "pgvector", "dsn": allowed, "connect_timeout": 2}}
    server = agent_server(tmp_path / "runs", [tmp_path / "root"], {"stores": stores})
    _docs(tmp_path)
    moved = allowed + trick.format(b=tcp.port)
    attacks = [
        _folder(embedding_model="hash", vector_db={"provider": "pgvector", "connection": {"dsn": moved}}),
        _folder(embedding_model="hash", connection="team-pg", vector_db={"connection": {"dsn": moved}}),
        _folder(embedding_model="hash", connection="team-pg" + trick.format(b=tcp.port)),
        _folder(embedding_model="hash", connection="team-pg", dsn=moved),
    ]
    for result in call(server, *[("indexfoundry_pipeline_run", attack) for attack in attacks]):
        _refused(result, "CONFIG_INVALID")
    assert tcp.received == []  # nothing reached the port the agent named
    assert run_folders(tmp_path / "runs") == []


def test_the_store_connects_to_the_port_libpq_reads_from_the_dsn(tmp_path: Path, tcp: TcpRecorder):
    """One parser: the connections file's DSN is read by libpq's own parser; the store connects with that reading."""
    url_port = TcpRecorder()
    try:
        dsn = f"postgresql://app@127.0.0.1:{url_port.port}/db?port={tcp.port}"  # the operator's own (odd) DSN
        assert parse_dsn(dsn)["port"] == str(tcp.port)
        stores = {"team-pg": {"provider": "pgvector", "dsn": dsn, "connect_timeout": 2}}
        _docs(tmp_path)
        server = agent_server(tmp_path / "runs", [tmp_path / "root"], {"stores": stores})
        (named,) = call(server, ("indexfoundry_pipeline_run", _folder(embedding_model="hash", connection="team-pg")))
        assert code(named) is not None or structured(named)["status"] == "failed"  # the listener is not PostgreSQL
        assert url_port.received == [] and tcp.received  # the check and the connection read the same value
    finally:
        url_port.close()


# ------------------------------------------------------------------ 4. store host and port
# chromadb's HTTP client leaves its socket unclosed when the server it opens is not Chroma (a
# third-party leak reported at garbage collection); nothing of IndexFoundry's is involved.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_agent_cannot_point_a_store_at_another_port_of_an_allowed_host(
    tmp_path: Path, canaries: dict[str, str], recorder: Recorder, other: Recorder
):
    """With ``http://127.0.0.1:A`` allowed, chroma ``{host: 127.0.0.1, port: B, api_key_env: …}`` once reached B."""
    stores = {
        "team-chroma": {"provider": "chroma", "host": "127.0.0.1", "port": recorder.port},
        "team-qdrant": {"provider": "qdrant", "url": recorder.url},
    }
    _docs(tmp_path)
    server = agent_server(tmp_path / "runs", [tmp_path / "root"], {"stores": stores})
    moved = {"host": "127.0.0.1", "port": other.port, "api_key_env": "EMBEDDING_API_KEY"}
    run = "01900000-0000-7000-8000-000000000009"
    results = call(
        server,
        (
            "indexfoundry_pipeline_run",
            _folder(embedding_model="hash", vector_db={"provider": "chroma", "connection": moved}),
        ),
        (
            "indexfoundry_pipeline_run",
            _folder(embedding_model="hash", connection="team-chroma", vector_db={"connection": moved}),
        ),
        ("indexfoundry_pipeline_run", _folder(embedding_model="hash", connection="team-qdrant", port=other.port)),
        ("indexfoundry_index_upsert", {"run_id": run, "provider": "chroma", "connection": moved}),
        ("indexfoundry_index_upsert", {"run_id": run, "connection": "team-chroma", "port": other.port}),
    )
    for result in results:
        _refused(result, "CONFIG_INVALID")
    named = call(
        server,
        ("indexfoundry_pipeline_run", _folder(embedding_model="hash", connection="team-chroma")),
        ("indexfoundry_pipeline_run", _folder(embedding_model="hash", connection="team-qdrant")),
    )
    assert all(code(r) is not None or structured(r)["status"] == "failed" for r in named)  # not a real store
    gc.collect()  # collect chromadb's leaked socket here, under this test's warning filter
    assert other.requests == []
    assert recorder.requests  # both clients went to the one port the operator named
    assert leaks(recorder.requests) == []  # and took no secret there


# ------------------------------------------------------------------ 5. env names bound to their field
def test_an_agent_cannot_send_another_secret_as_the_embedding_key(
    tmp_path: Path, canaries: dict[str, str], recorder: Recorder
):
    """``index.api_key_env: INDEXFOUNDRY_API_KEYS`` once sent the HTTP API's keys to the embedding endpoint."""
    embeddings = {
        "team-embed": {
            "model": "openai:test-embed",
            "base_url": f"{recorder.url}/v1",
            "api_key_env": "EMBEDDING_API_KEY",
        }
    }
    _docs(tmp_path)
    server = agent_server(tmp_path / "runs", [tmp_path / "root"], {"embeddings": embeddings})
    run = "01900000-0000-7000-8000-000000000009"
    attacks = [
        ("indexfoundry_pipeline_run", _folder(embedding_connection="team-embed", api_key_env="INDEXFOUNDRY_API_KEYS")),
        ("indexfoundry_pipeline_run", _folder(embedding_model="local", api_key_env="PDF_PASSWORD")),
        (
            "indexfoundry_pipeline_run",
            {**_folder(embedding_connection="team-embed"), "extract": {"pdf_password_env": "RERANK_API_KEY"}},
        ),
        (
            "indexfoundry_pipeline_run",
            {**_folder(embedding_connection="team-embed"), "serve": {"api_keys_env": "EMBEDDING_API_KEY"}},
        ),
        (
            "indexfoundry_index_embed",
            {"run_id": run, "model": {"connection": "team-embed", "api_key_env": "PDF_PASSWORD"}},
        ),
    ]
    for result in call(server, *attacks):
        _refused(result, "CONFIG_INVALID")
    assert recorder.requests == []
    (built,) = call(server, ("indexfoundry_pipeline_run", _folder(embedding_connection="team-embed")))
    assert structured(built)["status"] == "completed", structured(built)
    assert recorder.requests and all(r.headers.get("authorization") == EMBED_KEY[1] for r in recorder.requests)
    assert leaks(recorder.requests, {"EMBEDDING_API_KEY": EMBED_KEY}) == []


# ------------------------------------------------------------------ 6. dot segments in base_url
@pytest.mark.parametrize("suffix", ["/v1/../v1", "/v1/%2e%2e/v1", "/v1/./", "/x/%2E%2E/v1"])
def test_an_endpoint_is_the_url_it_reads_as_and_an_agent_writes_none(
    tmp_path: Path, canaries: dict[str, str], recorder: Recorder, suffix: str
):
    """``base_url: http://127.0.0.1:A/v1/../../x`` once passed the ``/v1`` prefix check; the key went to ``/x``."""
    embeddings = {"team-embed": {"model": "openai:test-embed", "base_url": recorder.url + suffix}}
    _docs(tmp_path)
    server = agent_server(tmp_path / "runs", [tmp_path / "root"], {"embeddings": embeddings})
    exact = _folder(embedding_connection="team-embed", base_url=f"{recorder.url}/v1/../../x")
    refused, built = call(
        server,
        ("indexfoundry_pipeline_run", exact),
        ("indexfoundry_pipeline_run", _folder(embedding_connection="team-embed")),
    )
    _refused(refused, "CONFIG_INVALID", "index.base_url")
    assert structured(built)["status"] == "completed", structured(built)
    assert {(r.method, r.path) for r in recorder.requests} == {("POST", "/v1/embeddings")}
    frozen = (tmp_path / "runs" / structured(built)["run_id"] / "config.json").read_text(encoding="utf-8")
    assert f'"base_url":"{recorder.url}/v1' in frozen.replace(" ", "")  # the one parsed value is what the run keeps


# ------------------------------------------------------------------ 7. freshness amplification
def _url_run(tmp_path: Path, recorder: Recorder, pages: int) -> str:
    config = {
        "connect": {
            "sources": [{"type": "url", "url": f"{recorder.url}/p{i}"} for i in range(pages)],
            "allowed_private_hosts": [f"127.0.0.1:{recorder.port}"],
        },
        "index": {"embedding_model": "hash"},
    }
    run = api.pipeline_run(config, runs_dir=tmp_path / "runs")
    assert run.status == "completed"
    return run.run_id


def test_ten_freshness_calls_cost_at_most_one_sweep_of_the_sources(
    tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
):
    """Unauthenticated ``/freshness``: 10 calls in 1.5 s once made 400 requests (one per source, each call)."""
    from indexfoundry.models.config import RateLimitConfig
    from tests.integration.http_support import live_server

    monkeypatch.delenv("INDEXFOUNDRY_API_KEYS", raising=False)
    pages = 40
    run_id = _url_run(tmp_path, recorder, pages)
    built = len(recorder.requests)
    limit = RateLimitConfig(requests_per_minute=6000, burst=1000)  # generous: only the reuse is measured here
    with live_server(tmp_path / "runs", run_id, rate_limit=limit) as server, server.client() as client:
        answers = [client.post("/freshness", json={}) for _ in range(10)]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    assert len(recorder.requests) - built <= pages
    assert answers[0].json()["checked"] == pages and answers[-1].json()["reused"] == pages
    # The MCP tool: the same bound.
    before = len(recorder.requests)
    server = agent_server(tmp_path / "runs", [tmp_path], run_id=run_id)
    results = call(server, *[("check_freshness", {"run_id": run_id}) for _ in range(10)])
    assert all(code(r) is None for r in results)
    assert len(recorder.requests) - before <= pages


def test_freshness_is_charged_per_source_and_needs_a_key_once_the_server_has_keys(
    tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
):
    from indexfoundry.models.config import RateLimitConfig
    from tests.integration.http_support import live_server

    run_id = _url_run(tmp_path, recorder, 12)
    built = len(recorder.requests)
    monkeypatch.setenv("INDEXFOUNDRY_API_KEYS", "freshness-key-0123456789")
    limit = RateLimitConfig(requests_per_minute=60, burst=10)
    with live_server(tmp_path / "runs", run_id, rate_limit=limit) as server, server.client() as client:
        anonymous = client.post("/freshness", json={})
        first = client.post("/freshness", json={}, headers={"X-API-Key": "freshness-key-0123456789"})
        second = client.post("/freshness", json={}, headers={"X-API-Key": "freshness-key-0123456789"})
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "AUTH_REQUIRED"
    assert first.status_code == 200 and first.json()["limited"] is True
    assert first.json()["checked"] == 9  # the burst of 10, less the request itself
    assert second.status_code == 429 and "Retry-After" in second.headers
    assert len(recorder.requests) - built == 9
