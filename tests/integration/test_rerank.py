"""Reranking (the retrieval profile's ``reranker`` block) with each provider, over a real run.

Cross-encoder: a real CrossEncoder folder built from the packaged MiniLM weights with a seeded
head (tests/rerank_support.py). Cohere and the TEI/Infinity/Jina/vLLM shape: a local server
speaking those APIs on 127.0.0.1 (no real service is reachable here).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool
from indexfoundry.backends.rerank import resolve_reranker
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.retrieval import RerankerConfig, SearchRequest
from indexfoundry.retrieval.service import SearchService
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree
from tests.rerank_support import RerankServer, build_cross_encoder, overlap

DOCS: dict[str, str | bytes] = {
    **SAMPLE_DOCS,
    "guide/running.md": "# Running\n\n## Servers\n\nThe server runs on port 8000. Start it with the serve command.\n",
    "api/search.md": "# Search API\n\n## Modes\n\nKeyword search ranks chunks by BM25 over stemmed words.\n",
    "faq.md": "# FAQ\n\n## Port\n\nChange the port of the server with --port.\n\n## Theme\n\nThemes live in themes/.\n",
}
MODES = ("semantic", "keyword", "hybrid")
QUERY = "change the server port"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("rerank")
    docs = write_tree(root / "docs", DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=root / "runs")
    assert out.status == "completed"
    return root / "runs", out.run_id


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cross_encoder(tmp_path_factory.mktemp("ce") / "model")


@pytest.fixture
def server() -> Iterator[RerankServer]:
    srv = RerankServer().start()
    yield srv
    srv.stop()


def service_with(run: tuple[Path, str], **reranker: object) -> SearchService:
    service = api.search_service(run[1], runs_dir=run[0])
    service.use_reranker(RerankerConfig(enabled=True, **reranker))  # type: ignore[arg-type]
    return service


@pytest.mark.model
def test_a_cross_encoder_scores_a_pair_the_same_whatever_else_is_in_the_batch(cross_encoder: Path):
    reranker = resolve_reranker(RerankerConfig(model=f"cross-encoder:{cross_encoder}", batch_size=2))
    texts = [
        "Change the port of the server with --port.",
        "Python 3.11 or newer is required to install the package. " * 6,  # another length bucket
        "The server runs on port 8000.",
        "x",
    ]
    together = reranker.score(QUERY, texts)
    alone = [reranker.score(QUERY, [text])[0] for text in texts]
    reversed_ = reranker.score(QUERY, texts[::-1])[::-1]
    with_others = reranker.score(QUERY, [texts[0], "filler text", "more filler"])[0]
    assert together == alone == reversed_
    assert with_others == together[0]
    assert len(set(together)) == len(texts)  # a real model: different texts, different scores


@pytest.mark.model
def test_search_with_a_cross_encoder_orders_by_rerank_score_in_every_mode(run, cross_encoder: Path):
    service = service_with(run, model=f"cross-encoder:{cross_encoder}", top_k_to_rerank=5, batch_size=4)
    plain = api.search_service(run[1], runs_dir=run[0])
    for mode in MODES:
        retrieved = plain.search(SearchRequest(query=QUERY, mode=mode, top_k=5)).results
        response = service.search(SearchRequest(query=QUERY, mode=mode, top_k=3))
        assert response.reranker == f"cross-encoder:{cross_encoder.resolve()}"
        assert response.warnings == []
        scores = [r.rerank_score for r in response.results]
        assert all(s is not None for s in scores)
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        # the best 3 of the 5 retrieved candidates, each with its retrieval score kept
        by_id = {r.chunk_id: r.score for r in retrieved}
        assert {r.chunk_id for r in response.results} <= set(by_id)
        assert all(r.score == by_id[r.chunk_id] for r in response.results)
        assert [r.chunk_id for r in response.results] != [] and len(response.results) == min(3, len(retrieved))


def test_the_http_rerank_shapes_of_tei_and_jina_both_rerank(run, server: RerankServer, monkeypatch):
    monkeypatch.setenv("RERANK_API_KEY", "sk-rerank-secret")
    for url in (server.url, f"{server.url}/v1/rerank"):
        service = service_with(run, model=f"http:{url}", top_k_to_rerank=10, request_model="bge-reranker")
        response = service.search(SearchRequest(query=QUERY, mode="hybrid", top_k=4))
        assert response.warnings == []
        expected = sorted((overlap(QUERY, r.text) for r in response.results), reverse=True)
        assert [r.rerank_score for r in response.results] == expected
    tei, jina = server.requests
    assert tei.path == "/rerank" and jina.path == "/v1/rerank"
    assert tei.body["texts"] == tei.body["documents"] and tei.body["top_n"] == len(tei.body["texts"])
    assert jina.body["model"] == "bge-reranker"
    assert tei.headers["authorization"] == "Bearer sk-rerank-secret"


def test_cohere_reranks_through_the_official_sdk_with_retries(run, server: RerankServer, monkeypatch):
    monkeypatch.setenv("COHERE_KEY", "co-secret")
    server.script = ["503", "429"]
    service = service_with(run, model="cohere:rerank-v3.5", base_url=server.url, api_key_env="COHERE_KEY", backoff_ms=0)
    response = service.search(SearchRequest(query=QUERY, mode="keyword", top_k=3))
    assert response.warnings == [] and response.reranker == "cohere:rerank-v3.5"
    assert [r.rerank_score for r in response.results] == sorted(
        (overlap(QUERY, r.text) for r in response.results), reverse=True
    )
    assert len(server.requests) == 3
    assert all(r.path == "/v2/rerank" and r.body["model"] == "rerank-v3.5" for r in server.requests)
    assert server.requests[-1].headers["authorization"] == "Bearer co-secret"


@pytest.mark.parametrize("failure", ["401", "malformed", "down"])
def test_a_failing_reranker_falls_back_to_the_retrieval_order_with_a_warning(
    run, server: RerankServer, monkeypatch, failure: str
):
    monkeypatch.setenv("RERANK_API_KEY", "sk-leak-me-not")
    url = "http://127.0.0.1:9" if failure == "down" else server.url
    server.script = [failure] * 10
    service = service_with(run, model=f"http:{url}", max_retries=1, backoff_ms=0, timeout_ms=2000)
    plain = api.search_service(run[1], runs_dir=run[0])
    request = SearchRequest(query=QUERY, mode="hybrid", top_k=4)
    response = service.search(request)
    assert [r.chunk_id for r in response.results] == [r.chunk_id for r in plain.search(request).results]
    assert response.results and all(r.rerank_score is None for r in response.results)
    assert response.reranker is None
    assert len(response.warnings) == 1 and "RERANK_ERROR" in response.warnings[0]
    assert "sk-leak-me-not" not in response.warnings[0]


def test_the_profile_tool_enables_reranking_for_every_surface(run, server: RerankServer):
    runs_dir, run_id = run
    payload = {
        "run_id": run_id,
        "retrieval_config": {
            "search_modes": ["semantic", "keyword", "hybrid"],
            "reranker": {"enabled": True, "model": f"http:{server.url}", "top_k_to_rerank": 8},
        },
    }
    try:
        call_tool("indexfoundry_index_build_profile", payload, runs_dir=runs_dir)
        response = api.search(QUERY, run_id, runs_dir=runs_dir, mode="semantic", top_k=2)
        assert response.reranker is not None and response.results[0].rerank_score is not None
        assert len(server.requests[0].body["texts"]) == 8  # top_k_to_rerank candidates, cut to top_k
    finally:
        call_tool(
            "indexfoundry_index_build_profile",
            {"run_id": run_id, "retrieval_config": {"search_modes": ["semantic", "keyword", "hybrid"]}},
            runs_dir=runs_dir,
        )


@pytest.mark.parametrize(
    "reranker",
    [{"enabled": True}, {"enabled": True, "model": "magic:thing"}, {"model": "cross-encoder:"}],
)
def test_a_reranker_block_naming_no_provider_is_refused(run, reranker: dict[str, object]):
    runs_dir, run_id = run
    with pytest.raises(IndexFoundryError) as caught:
        call_tool(
            "indexfoundry_index_build_profile",
            {"run_id": run_id, "retrieval_config": {"reranker": reranker}},
            runs_dir=runs_dir,
        )
    assert caught.value.code == "CONFIG_INVALID"


def test_eval_with_a_reranker_measures_the_reranked_order_and_fails_when_it_fails(tmp_path: Path, server: RerankServer):
    from tests.integration.test_eval_beir import invoke, make_beir

    beir = make_beir(tmp_path / "mini")
    args = [str(beir), "--runs-dir", str(tmp_path / "runs"), "--embedding-model", "hash", "--json"]
    code, out = invoke(*args, "--mode", "semantic", "--reranker", f"http:{server.url}", "--rerank-top-k", "5")
    assert code == 0, out
    report = json.loads(out)
    assert report["reranker"].startswith("http:127.0.0.1:")
    assert report["metrics"]["semantic"]["mrr@10"] == 1.0  # word overlap puts each judged document first
    assert server.requests and all(len(r.body["texts"]) == 5 for r in server.requests)
    server.script = ["401"] * 50
    with pytest.raises(IndexFoundryError) as caught:
        invoke(*args, "--mode", "semantic", "--reranker", f"http:{server.url}")
    assert caught.value.code == "RERANK_ERROR"


def test_a_reranker_in_the_run_profile_reranks_through_mcp_and_http_and_a_failure_is_a_warning_in_both(
    tmp_path: Path, server: RerankServer
):
    """The run's config enables the reranker (a local server speaking the TEI rerank API); the MCP
    server (official SDK client) and the HTTP API both answer reranked, carrying both scores; when
    the reranker fails, both answer in retrieval order with the RERANK_ERROR warning."""
    import anyio
    from mcp.client import Client

    from indexfoundry.surfaces.mcp import ServerOptions, create_server
    from tests.integration.http_support import live_server
    from tests.integration.mcp_support import structured, texts

    reranker = {"enabled": True, "model": f"http:{server.url}", "top_k_to_rerank": 8, "max_retries": 0}
    docs = write_tree(tmp_path / "docs", DOCS)
    out = api.pipeline_run(folder_config(docs, serve={"retrieval": {"reranker": reranker}}), runs_dir=tmp_path / "runs")
    assert out.status == "completed"
    runs_dir = tmp_path / "runs"
    query = {"query": QUERY, "top_k": 3, "mode": "hybrid"}

    async def ask_mcp() -> Any:  # a new server each time: reranked lists are cached per service
        mcp_server, _ = create_server(ServerOptions(runs_dir=runs_dir, run_id=out.run_id, embedding_model="hash"))
        async with Client(mcp_server) as client:
            return await client.call_tool("search_docs", query)

    def ask_http() -> dict[str, Any]:
        with live_server(runs_dir, out.run_id) as http, http.client() as client:
            answer = client.post("/search/hybrid", json={"query": QUERY, "top_k": 3})
            assert answer.status_code == 200, answer.text
            return dict(answer.json())

    unreranked = api.search_service(out.run_id, runs_dir=runs_dir)
    unreranked.use_reranker(RerankerConfig())  # off: the retrieval order
    plain = [r.chunk_id for r in unreranked.search(SearchRequest(query=QUERY, mode="hybrid", top_k=3)).results]
    mcp, http = anyio.run(ask_mcp), ask_http()
    hits, results = structured(mcp)["results"], http["results"]
    assert [h["chunk_id"] for h in hits] == [r["chunk_id"] for r in results]
    assert all(h["rerank_score"] is not None and h["score"] is not None for h in hits)
    assert all(r["rerank_score"] is not None and r["score"] is not None for r in results)
    assert http["reranker"] and not http.get("warnings") and not structured(mcp)["warnings"]
    reranked = [r["rerank_score"] for r in results]
    assert reranked == sorted(reranked, reverse=True)
    assert reranked == [overlap(QUERY, r["text"]) for r in results]  # the rerank server's scores
    assert [h["rerank_score"] for h in hits] == reranked
    assert server.requests and all(len(r.body["texts"]) == 8 for r in server.requests)  # top_k_to_rerank
    # The reranker fails (503 on every request): both answer in retrieval order, with the warning.
    server.script = ["503"] * 20
    mcp, http = anyio.run(ask_mcp), ask_http()
    hits, results = structured(mcp)["results"], http["results"]
    assert [h["chunk_id"] for h in hits] == [r["chunk_id"] for r in results] == plain
    assert all(h.get("rerank_score") is None for h in hits) and all(r.get("rerank_score") is None for r in results)
    for warnings in (structured(mcp)["warnings"], http["warnings"]):
        assert len(warnings) == 1 and "RERANK_ERROR" in warnings[0]
    assert len(texts(mcp)) == 4  # the header and three results: never an empty answer
