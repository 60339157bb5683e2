"""Token budgets with cursors: answers in pages that concatenate to exactly the unbudgeted answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.retrieval import SearchRequest, SearchResponse
from indexfoundry.retrieval.budget import CharCounter, counter_for, cut_text, fit_texts
from indexfoundry.retrieval.service import SearchService
from indexfoundry.surfaces.cli import app
from tests.conftest import folder_config, write_tree

WORDS = "install theme server port cache index search query plugin config build deploy token page".split()  # noqa: SIM905


def _section(doc: int, sec: int) -> str:
    words = " ".join(WORDS[(doc * 7 + sec * 3 + i) % len(WORDS)] for i in range(12 + (doc + sec) % 9))
    return f"## Part {sec}\n\nDocument {doc} section {sec}: {words}.\n"


DOCS: dict[str, str | bytes] = {
    f"d{doc:02d}.md": f"# Doc {doc}\n\n" + "\n".join(_section(doc, sec) for sec in range(6)) for doc in range(60)
}
DOCS["long.md"] = "# Long\n\n## Everything\n\n" + "\n".join(
    f"Line {i}: " + " ".join(WORDS[(i + j) % len(WORDS)] for j in range(10)) for i in range(45)
)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> SearchService:
    root = tmp_path_factory.mktemp("budget")
    docs = write_tree(root / "docs", DOCS)
    config = folder_config(docs, normalize={"chunk_strategy": "by_heading", "max_chars": 4000})
    out = api.pipeline_run(config, runs_dir=root / "runs")
    assert out.status == "completed"
    return api.search_service(out.run_id, runs_dir=root / "runs")


def pages_of(service: SearchService, request: SearchRequest) -> list[SearchResponse]:
    pages, cursor = [], None
    while True:
        page = service.search(request.model_copy(update={"cursor": cursor}))
        pages.append(page)
        cursor = page.next_cursor
        if cursor is None:
            return pages
        assert len(pages) < 500


def test_a_300_result_answer_under_2000_tokens_comes_in_pages_that_concatenate_to_the_whole(
    service: SearchService,
):
    whole = service.search(SearchRequest(query="theme server port", mode="semantic", top_k=300))
    assert len(whole.results) == 300 and whole.next_cursor is None
    pages = pages_of(service, SearchRequest(query="theme server port", mode="semantic", top_k=300, max_tokens=2000))
    assert len(pages) > 5
    for page in pages:
        assert page.tokens is not None and page.tokens <= 2000
        assert page.tokens == sum(service.result_tokens(r) for r in page.results)
        assert page.results
    assert [r for page in pages for r in page.results] == whole.results
    # stable: the same cursor gives the same page again
    again = service.search(
        SearchRequest(
            query="theme server port", mode="semantic", top_k=300, max_tokens=2000, cursor=pages[0].next_cursor
        )
    )
    assert again == pages[1]


def test_a_result_larger_than_the_budget_comes_in_parts_whose_texts_join_to_the_chunk(service: SearchService):
    request = SearchRequest(query="long everything line", mode="keyword", top_k=1, filters=[], max_tokens=300)
    whole = service.search(request.model_copy(update={"max_tokens": None}))
    assert whole.results[0].source.uri.endswith("long.md")
    pages = pages_of(service, request)
    assert len(pages) > 2
    assert all(p.tokens is not None and p.tokens <= 300 for p in pages)
    parts = [p.results[0] for p in pages]
    assert "".join(r.text for r in parts) == whole.results[0].text
    assert parts[0].text_range == (0, len(parts[0].text))
    assert {r.chunk_id for r in parts} == {whole.results[0].chunk_id}


@pytest.mark.parametrize("cursor", ["not-a-cursor", "eyJ2IjoxfQ"])
def test_a_cursor_from_nowhere_is_refused(service: SearchService, cursor: str):
    with pytest.raises(IndexFoundryError) as caught:
        service.search(SearchRequest(query="theme", mode="semantic", top_k=50, max_tokens=500, cursor=cursor))
    assert caught.value.code == "CONFIG_INVALID"


def test_a_cursor_of_another_query_is_refused(service: SearchService):
    first = service.search(SearchRequest(query="theme", mode="semantic", top_k=50, max_tokens=500))
    assert first.next_cursor is not None
    with pytest.raises(IndexFoundryError) as caught:
        service.search(SearchRequest(query="port", mode="semantic", top_k=50, max_tokens=500, cursor=first.next_cursor))
    assert caught.value.code == "CONFIG_INVALID"


def test_texts_are_cut_within_the_budget_at_line_ends_and_rejoin_exactly():
    counter = CharCounter()
    text = "".join(f"line {i} with some words\n" for i in range(200))
    parts, offset = [], 0
    while True:
        part, offset_next, tokens = fit_texts(text, offset, 100, counter)
        assert tokens <= 100 and part.endswith("\n")
        parts.append(part)
        if offset_next is None:
            break
        offset = offset_next
    assert "".join(parts) == text
    assert cut_text("x" * 10, 0, 0, counter) == 1  # always progress


def test_runs_of_the_local_model_count_with_its_tokenizer_others_with_chars():
    local = counter_for("local:sentence-transformers/all-MiniLM-L6-v2@53aa51172d14")
    assert local.name != "chars/4"
    long = "tokenization " * 400  # far past the model's 128-token truncation
    assert local.count(long) > 400
    assert counter_for("hash:384").name == "chars/4"


def test_cli_search_pages_with_max_tokens_and_cursor(service: SearchService):
    runs = service.layout.root.parent
    base = ["search", "theme", "--run-id", service.run_id, "--runs-dir", str(runs), "--top-k", "40", "--json"]
    seen: list[str] = []
    cursor: str | None = None
    while True:
        extra = ["--max-tokens", "1500"] + (["--cursor", cursor] if cursor else [])
        done = CliRunner().invoke(app, [*base, *extra])
        assert done.exit_code == 0, done.output
        out = json.loads(done.stdout)
        assert out["tokens"] <= 1500
        seen.extend(r["chunk_id"] for r in out["results"])
        cursor = out.get("next_cursor")
        if not cursor:
            break
    whole = json.loads(CliRunner().invoke(app, base).stdout)
    assert seen == [r["chunk_id"] for r in whole["results"]]


@pytest.mark.slow
def test_mcp_search_page_and_section_page_with_cursors_through_the_official_client(service: SearchService, tmp_path):
    import anyio

    from tests.integration.mcp_support import stdio_session, structured, texts

    runs = service.layout.root.parent

    async def collect(session: Any, tool: str, args: dict[str, Any]) -> list[Any]:
        answers, cursor = [], None
        while True:
            result = await session.call_tool(tool, {**args, **({"cursor": cursor} if cursor else {})})
            assert not result.is_error, texts(result)
            answers.append(result)
            cursor = structured(result).get("next_cursor")
            if cursor is None:
                return answers
            assert len(answers) < 200

    async def main() -> tuple[list[Any], ...]:
        async with stdio_session("--runs-dir", str(runs), "--run-id", service.run_id, cwd=tmp_path) as session:
            search = await collect(session, "search_docs", {"query": "theme port", "top_k": 120, "max_tokens": 1500})
            whole = await collect(session, "search_docs", {"query": "theme port", "top_k": 120, "max_tokens": 20000})
            page = await collect(session, "get_page", {"path": "docs/long.md", "max_tokens": 200})
            section = await collect(
                session, "get_section", {"path": "docs/long.md", "heading": "Everything", "max_tokens": 200}
            )
            full = await collect(session, "get_page", {"path": "docs/long.md"})
            return search, whole, page, section, full

    search, whole, page, section, full = anyio.run(main)
    assert len(search) > 1 and len(whole) == 1
    assert all(structured(a)["tokens"] <= 1500 for a in search)
    hits = [h for a in search for h in structured(a)["results"]]
    assert hits == structured(whole[0])["results"]
    assert [h["rank"] for h in hits] == list(range(1, 121))
    assert len(page) > 2 and all(structured(a)["tokens"] <= 200 for a in page)
    text = texts(full[0])[1]
    assert "".join(texts(a)[1] for a in page) == text
    assert "".join(texts(a)[1] for a in section) == text[text.index("## Everything") :]


def test_http_search_pages_with_max_tokens_and_refuses_a_foreign_cursor(service: SearchService):
    from tests.integration.http_support import live_server

    runs = service.layout.root.parent
    with live_server(runs, service.run_id, max_top_k=100) as server, server.client() as client:
        body = {"query": "theme port", "top_k": 60}
        whole = client.post("/search/semantic", json=body).json()
        seen, cursor = [], None
        while True:
            answer = client.post("/search/semantic", json={**body, "max_tokens": 1200, "cursor": cursor})
            assert answer.status_code == 200, answer.text
            data = answer.json()
            assert data["tokens"] <= 1200
            seen.extend(data["results"])
            cursor = data.get("next_cursor")
            if cursor is None:
                break
        assert seen == whole["results"]
        first = client.post("/search/semantic", json={**body, "max_tokens": 1200}).json()
        foreign = client.post(
            "/search/semantic", json={"query": "other", "top_k": 60, "max_tokens": 1200, "cursor": first["next_cursor"]}
        )
        assert foreign.status_code == 400 and foreign.json()["error"]["code"] == "CONFIG_INVALID"
