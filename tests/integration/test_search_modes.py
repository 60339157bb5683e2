"""Semantic, keyword and hybrid search over a real run: filters, paging, profile, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.retrieval import SearchFilter, SearchRequest
from indexfoundry.retrieval import service as service_module
from indexfoundry.retrieval.filters import matches
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.cli import app
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree

DOCS: dict[str, str | bytes] = {
    **SAMPLE_DOCS,
    "guide/running.md": "# Running\n\n## Servers\n\nThe server runs on port 8000. Start it with the serve command.\n",
    "api/search.md": "# Search API\n\n## Modes\n\nKeyword search ranks chunks by BM25 over stemmed words.\n",
}
MODES = ("semantic", "keyword", "hybrid")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("search")
    docs = write_tree(root / "docs", DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=root / "runs")
    assert out.status == "completed"
    return root / "runs", out.run_id


def search(run: tuple[Path, str], query: str, **kwargs: Any) -> list[Any]:
    runs_dir, run_id = run
    return api.search(query, run_id, runs_dir=runs_dir, **kwargs).results


def test_keyword_search_finds_other_word_forms_and_only_chunks_containing_a_term(run):
    results = search(run, "running servers", mode="keyword")  # the text says "Running", "runs", "server"
    assert results[0].source.uri == "docs/guide/running.md"
    assert all("server" in r.text.lower() or "run" in r.text.lower() for r in results)
    assert search(run, "zeppelin", mode="keyword") == []


def test_every_mode_returns_the_documented_result_fields(run):
    for mode in MODES:
        top = search(run, "change the theme colours", mode=mode, top_k=3)
        assert top, mode
        assert top[0].source.uri == "docs/guide/theme.md", mode
        assert top[0].breadcrumb == "Theme > Changing the theme"
        assert top[0].run_id == run[1]
        assert [r.score for r in top] == sorted((r.score for r in top), reverse=True)


def test_hybrid_fuses_both_rankings(run):
    semantic = [r.chunk_id for r in search(run, "BM25 stemmed words", mode="semantic", top_k=20)]
    keyword = [r.chunk_id for r in search(run, "BM25 stemmed words", mode="keyword", top_k=20)]
    hybrid = [r.chunk_id for r in search(run, "BM25 stemmed words", mode="hybrid", top_k=20)]
    assert set(hybrid) == set(semantic) | set(keyword)
    assert hybrid[0] == keyword[0]


@pytest.mark.parametrize(
    "filters",
    [
        [SearchFilter(field="source.uri", op="in", value=["docs/guide/install.md", "docs/guide/theme.md"])],
        [SearchFilter(field="source.uri", op="contains", value="guide/")],
        [SearchFilter(field="metadata.heading_path", op="contains", value="Using")],
        [SearchFilter(field="source.type", op="neq", value="markdown")],
    ],
)
def test_filters_keep_exactly_the_matching_chunks_in_every_mode(run, filters: list[SearchFilter]):
    runs_dir, run_id = run
    chunks = list(iter_jsonl(RunLayout(runs_dir / run_id).chunks))
    allowed = {c["chunk_id"] for c in chunks if matches(c, filters)}
    # every chunk shares a word with the query, so keyword search can reach them all
    query = "the install theme server search"
    for mode in ("semantic", "hybrid"):
        got = {r.chunk_id for r in search(run, query, mode=mode, top_k=100, filters=filters)}
        assert got == allowed, mode
    keyword = {r.chunk_id for r in search(run, query, mode="keyword", top_k=100, filters=filters)}
    assert keyword <= allowed and (keyword or not allowed)


def test_paging_with_offset_continues_the_same_ranking(run):
    for mode in MODES:
        full = [r.chunk_id for r in search(run, "install the theme", mode=mode, top_k=6)]
        page = [r.chunk_id for r in search(run, "install the theme", mode=mode, top_k=2, offset=2)]
        assert page == full[2:4], mode


def test_a_filter_the_profile_does_not_allow_is_refused(run):
    for flt in (
        SearchFilter(field="metadata.title", op="eq", value="Theming"),
        SearchFilter(field="source.type", op="gt", value=1),
    ):
        with pytest.raises(IndexFoundryError) as caught:
            search(run, "theme", mode="keyword", filters=[flt])
        assert caught.value.code == "CONFIG_INVALID"


def test_build_profile_tool_writes_the_profile_that_search_then_follows(tmp_path: Path):
    docs = write_tree(tmp_path / "docs", DOCS)
    runs_dir = tmp_path / "runs"
    run_id = api.pipeline_run(folder_config(docs), runs_dir=runs_dir).run_id
    out = call_tool(
        "indexfoundry_index_build_profile",
        {
            "run_id": run_id,
            "retrieval_config": {
                "default_top_k": 5,
                "search_modes": ["keyword", "hybrid"],
                "hybrid_config": {"alpha": 1.0, "fusion_method": "weighted_sum"},
            },
            "allowed_filters": [
                {"field": "metadata.title", "operators": ["eq"]},
                {"field": "position.page", "operators": ["neq"]},
            ],
        },
        runs_dir=runs_dir,
    )
    layout = RunLayout(runs_dir / run_id)
    written = read_json(layout.retrieval_profile)
    assert written == out.model_dump(mode="json", exclude_none=True)["profile"]
    assert written["retrieval_config"]["search_modes"] == ["keyword", "hybrid"]
    service = api.search_service(run_id, runs_dir=runs_dir)
    with pytest.raises(IndexFoundryError) as caught:
        service.search(SearchRequest(query="theme", mode="semantic"))
    assert caught.value.code == "CONFIG_INVALID"
    with pytest.raises(IndexFoundryError) as caught:
        service.search(
            SearchRequest(query="theme", mode="keyword", filters=[SearchFilter(field="source.uri", value="x")])
        )
    assert caught.value.code == "CONFIG_INVALID"
    titled = service.search(
        SearchRequest(query="theme", mode="keyword", filters=[SearchFilter(field="metadata.title", value="Theming")])
    )
    assert {r.source.uri for r in titled.results} == {"docs/guide/theme.md"}
    # markdown has no pages: chunks without the field match no operator, neq included, in every mode
    no_page = [SearchFilter(field="position.page", op="neq", value=1)]
    for mode in ("keyword", "hybrid"):
        assert service.search(SearchRequest(query="theme install", mode=mode, filters=no_page)).results == []
    assert service.rank("theme install", "semantic", 10, no_page) == []
    # the CLI's default top-k is the profile's default_top_k (5 here; the run has more chunks)
    search_the = ["search", "the", "--run-id", run_id, "--runs-dir", str(runs_dir), "--json"]
    done = CliRunner().invoke(app, [*search_the, "--mode", "semantic"])
    assert isinstance(done.exception, IndexFoundryError)  # semantic is not offered by this profile
    assert done.exception.code == "CONFIG_INVALID"
    args = ["search", "install theme server search home", "--mode", "keyword", "--json"]
    done = CliRunner().invoke(app, [*args, "--run-id", run_id, "--runs-dir", str(runs_dir)])
    assert done.exit_code == 0, done.output
    assert len(json.loads(done.stdout)["results"]) == 5
    # alpha 1 with weighted_sum: hybrid orders the semantic candidates as semantic search does
    semantic = [cid for cid, _ in service.rank("install with pip", "semantic", 100)][:5]  # same candidates
    hybrid = [cid for cid, _ in service.rank("install with pip", "hybrid", 5)]
    assert hybrid == semantic


@pytest.mark.parametrize(
    "arguments",
    [
        {"retrieval_config": {}, "unknown": 1},
        {"retrieval_config": {"search_modes": ["fuzzy"]}},
        {"retrieval_config": {"reranker": {"enabled": True}}},
        {"retrieval_config": {}, "allowed_filters": [{"field": "nonsense.path", "operators": ["eq"]}]},
    ],
)
def test_build_profile_refuses_what_it_cannot_honour(run, arguments: dict[str, Any]):
    runs_dir, run_id = run
    with pytest.raises(IndexFoundryError) as caught:
        call_tool("indexfoundry_index_build_profile", {"run_id": run_id, **arguments}, runs_dir=runs_dir)
    assert caught.value.code == "CONFIG_INVALID"


def test_cli_queries_file_prints_one_json_line_per_query_in_order_with_one_model_load(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    runs_dir, run_id = run
    loads: list[str] = []
    real = service_module.resolve_embedder

    def counting(spec: str, config: Any = None) -> Any:
        loads.append(spec)
        return real(spec, config)

    monkeypatch.setattr(service_module, "resolve_embedder", counting)
    queries = tmp_path / "queries.txt"
    queries.write_text("change the theme colours\n\npip install\nport 8000 server\n", encoding="utf-8")
    args = ["search", "--queries", str(queries), "--run-id", run_id, "--runs-dir", str(runs_dir), "--mode", "hybrid"]
    done = CliRunner().invoke(app, [*args, "--top-k", "2", "--filter", "source.uri", "contains", "docs/"])
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["query"] for line in lines] == ["change the theme colours", "pip install", "port 8000 server"]
    assert [line["results"][0]["source"]["uri"] for line in lines] == [
        "docs/guide/theme.md",
        "docs/guide/install.md",
        "docs/guide/running.md",
    ]
    assert all(len(line["results"]) == 2 and line["mode"] == "hybrid" for line in lines)
    first = lines[0]["results"][0]
    assert {"chunk_id", "score", "text", "source", "breadcrumb", "position", "run_id"} <= set(first)
    assert first["run_id"] == run_id
    assert loads == [loads[0]]


def test_cli_filter_takes_field_op_value_and_a_refused_filter_exits_2(run):
    runs_dir, run_id = run
    base = ["search", "theme", "--run-id", run_id, "--runs-dir", str(runs_dir), "--json", "--mode", "keyword"]
    done = CliRunner().invoke(app, [*base, "--filter", "source.uri", "in", '["docs/guide/theme.md"]'])
    assert done.exit_code == 0, done.output
    assert {r["source"]["uri"] for r in json.loads(done.stdout)["results"]} == {"docs/guide/theme.md"}
    refused = subprocess.run(
        [sys.executable, "-m", "indexfoundry", *base, "--filter", "metadata.title", "eq", "Theming"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith("CONFIG_INVALID: ")
    assert "Traceback" not in refused.stderr
