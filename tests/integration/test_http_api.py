"""The HTTP API against a real uvicorn server on 127.0.0.1: every endpoint, errors, limits, logs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from tests.integration.http_support import LiveServer, live_server, make_run


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    root = tmp_path_factory.mktemp("http")
    run_id = make_run(root)
    with live_server(root / "runs", run_id, max_request_bytes=2048, max_query_chars=200, max_top_k=50) as server:
        yield server, run_id


@pytest.fixture
def client(served: tuple[LiveServer, str]) -> Iterator[httpx.Client]:
    with served[0].client() as c:
        yield c


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"}
    assert {"code", "message", "recoverable"} <= set(body["error"])
    code: str = body["error"]["code"]
    return code


@pytest.mark.parametrize("mode", ["semantic", "hybrid", "keyword"])
def test_each_search_mode_answers_results_like_the_cli_json(client: httpx.Client, served, mode: str):
    response = client.post(f"/search/{mode}", json={"query": "change the theme colours", "top_k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["run_id"] == served[1]
    assert body["mode"] == mode
    assert 1 <= len(body["results"]) <= 3
    top = body["results"][0]
    assert top["source"]["uri"] == "docs/guide/theme.md"
    assert {"chunk_id", "doc_id", "score", "text", "position", "metadata"} <= set(top)
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_the_mode_less_search_endpoint_defaults_to_hybrid_like_cli_and_mcp(client: httpx.Client):
    query = {"query": "change the theme colours", "top_k": 3}
    default = client.post("/search", json=query)
    assert default.status_code == 200, default.text
    hybrid = client.post("/search/hybrid", json=query).json()
    assert default.json()["mode"] == "hybrid"
    assert [r["chunk_id"] for r in default.json()["results"]] == [r["chunk_id"] for r in hybrid["results"]]
    keyword = client.post("/search", json={**query, "mode": "keyword"}).json()
    assert keyword["mode"] == "keyword"
    assert keyword["results"] == client.post("/search/keyword", json=query).json()["results"]
    bad = client.post("/search", json={**query, "mode": "fuzzy"})
    assert bad.status_code == 400 and error_code(bad) == "CONFIG_INVALID"


def test_offset_pages_through_the_same_ranking(client: httpx.Client):
    first = client.post("/search/semantic", json={"query": "install", "top_k": 3}).json()["results"]
    second = client.post("/search/semantic", json={"query": "install", "top_k": 1, "offset": 1}).json()["results"]
    assert [r["chunk_id"] for r in second] == [first[1]["chunk_id"]]


def test_filters_restrict_results_to_matching_chunks(client: httpx.Client):
    body = {
        "query": "install",
        "top_k": 10,
        "filters": [{"field": "source.uri", "op": "eq", "value": "docs/index.md"}],
    }
    results = client.post("/search/semantic", json=body).json()["results"]
    assert results and {r["source"]["uri"] for r in results} == {"docs/index.md"}


def test_filter_on_a_field_the_profile_does_not_allow_answers_400(client: httpx.Client):
    body = {"query": "install", "filters": [{"field": "content.text", "op": "eq", "value": "x"}]}
    response = client.post("/search/semantic", json=body)
    assert response.status_code == 400
    assert error_code(response) == "CONFIG_INVALID"


def test_document_endpoint_returns_the_document_with_its_chunks_and_text(client: httpx.Client):
    hit = client.post("/search/semantic", json={"query": "theme colours", "top_k": 1}).json()["results"][0]
    response = client.get(f"/documents/{hit['doc_id']}", params={"include_text": "true"})
    assert response.status_code == 200
    doc = response.json()
    assert doc["uri"] == "docs/guide/theme.md"
    assert hit["chunk_id"] in [c["chunk_id"] for c in doc["chunks"]]
    assert "Set theme.name" in doc["text"]
    assert "text" not in client.get(f"/documents/{hit['doc_id']}").json()


def test_chunk_endpoint_returns_the_canonical_chunk_record(client: httpx.Client, served):
    hit = client.post("/search/semantic", json={"query": "pip", "top_k": 1}).json()["results"][0]
    chunk = client.get(f"/chunks/{hit['chunk_id']}").json()
    layout = RunLayout(served[0].settings.runs_dir / served[1])
    on_disk = {row["chunk_id"]: row for row in iter_jsonl(layout.chunks)}[hit["chunk_id"]]
    assert chunk == on_disk


@pytest.mark.parametrize("path", ["/chunks/" + "0" * 64, "/documents/" + "0" * 64, "/no-such-endpoint"])
def test_unknown_ids_and_routes_answer_404_not_found(client: httpx.Client, path: str):
    response = client.get(path)
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"


def test_health_and_stats_describe_the_served_run(client: httpx.Client, served):
    health = client.get("/health").json()
    assert health == {"status": "ok", "run_id": served[1], "version": health["version"], "auth_required": False}
    stats = client.get("/stats").json()
    assert stats["run_id"] == served[1]
    assert stats["documents"] == 3
    assert stats["chunks"] >= 3
    assert stats["model"].startswith("hash")
    assert "semantic" in stats["search_modes"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "x" * 201},
        {"query": "ok", "top_k": 0},
        {"query": "ok", "top_k": 51},
        {"query": "ok", "offset": -1},
        {"query": "ok", "unknown": 1},
        {"top_k": 3},
        {"query": "ok", "filters": [{"field": "source.uri", "op": "like", "value": "x"}]},
    ],
)
def test_invalid_search_bodies_answer_400_config_invalid(client: httpx.Client, body):
    response = client.post("/search/semantic", json=body)
    assert response.status_code == 400
    assert error_code(response) == "CONFIG_INVALID"


def test_malformed_json_answers_400(client: httpx.Client):
    response = client.post("/search/semantic", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert error_code(response) == "CONFIG_INVALID"


def test_a_body_over_the_size_limit_answers_413(client: httpx.Client):
    body = json.dumps({"query": "ok", "filters": [{"field": "doc_id", "op": "in", "value": ["a" * 64] * 40}]})
    response = client.post("/search/semantic", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert error_code(response) == "REQUEST_TOO_LARGE"


def test_a_chunked_body_over_the_size_limit_answers_413(client: httpx.Client):
    def chunks() -> Iterator[bytes]:
        yield b'{"query": "'
        for _ in range(10):
            yield b"x" * 512
        yield b'"}'

    response = client.post("/search/semantic", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert error_code(response) == "REQUEST_TOO_LARGE"


def test_every_request_is_logged_to_the_run_without_its_query(client: httpx.Client, served):
    marker = "secret-query-text"
    response = client.post("/search/semantic", json={"query": marker})
    request_id = response.headers["x-request-id"]
    log = RunLayout(served[0].settings.runs_dir / served[1]).requests_log
    lines = {row["request_id"]: row for row in iter_jsonl(log)}
    line = lines[request_id]
    assert line["status"] == 200
    assert line["path"] == "/api/v1/search/semantic"
    assert line["run_id"] == served[1]
    assert marker not in log.read_text(encoding="utf-8")


def test_the_search_page_is_served_at_the_root(served):
    response = httpx.get(served[0].root + "/")
    assert response.status_code == 200
    assert 'data-base-path="/api/v1"' in response.text
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert httpx.get(served[0].root + "/static/app.js").status_code == 200


def test_the_served_spec_matches_the_spec_the_serve_phase_wrote(served):
    live = httpx.get(served[0].api + "/openapi.json").json()
    written = json.loads(RunLayout(served[0].settings.runs_dir / served[1]).openapi.read_text(encoding="utf-8"))
    # The test server has tighter limits than the run's config; everything else is the same app.
    assert set(live["paths"]) == set(written["paths"])
    assert live["components"]["schemas"].keys() == written["components"]["schemas"].keys()


def test_a_named_run_that_does_not_exist_cannot_be_served(tmp_path: Path):
    runs = tmp_path / "runs"
    runs.mkdir()
    from indexfoundry.surfaces.http import HttpSettings

    settings = HttpSettings(runs_dir=runs, run_id="01a22a3e-0000-7000-8000-000000000000", port=0, endpoints=["health"])
    with pytest.raises(RuntimeError):
        LiveServer(settings).start(timeout=10)
