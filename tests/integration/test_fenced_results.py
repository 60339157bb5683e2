"""Results cut from inside a long fenced code block: each says which fence its text begins in
(``fence``), for chunk texts, texts widened by ``expand`` and parts of a budgeted answer alike, and
MCP answers show such text with the fence re-opened and closed."""

from __future__ import annotations

from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.models.fences import as_markdown, fence_after
from indexfoundry.models.retrieval import SearchRequest, SearchResult
from indexfoundry.retrieval.service import SearchService
from tests.conftest import folder_config, write_tree

STEPS = "\n".join(f"    app.add_route('/step/{n}', handler_{n})  # route step {n} of the widget" for n in range(40))
GUIDE = (
    "# Routing\n\nRoutes map paths to handlers. The whole table of the widget is set up in one function:\n\n"
    f"```python title=routes.py\ndef setup(app):\n{STEPS}\n    return app\n```\n\n"
    "After the code, the widget serves every step route.\n"
)
OPENER = "```python title=routes.py"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> SearchService:
    root = tmp_path_factory.mktemp("fenced")
    docs = write_tree(root / "docs", {"routing.md": GUIDE})
    config = folder_config(docs, normalize={"chunk_strategy": "recursive", "max_chars": 400, "overlap_chars": 0})
    out = api.pipeline_run(config, runs_dir=root / "runs")
    assert out.status == "completed"
    return api.search_service(out.run_id, runs_dir=root / "runs")


def _all(service: SearchService, **kw: Any) -> list[SearchResult]:
    request = SearchRequest(query="widget route step handler", mode="keyword", top_k=50, filters=[], **kw)
    return service.search(request).results


def _fence_at_byte(start: int) -> str | None:
    """The oracle: the fence open at byte ``start`` of the document, read from its beginning."""
    return fence_after(GUIDE.encode()[:start].decode())


def test_every_chunk_result_names_the_fence_its_text_begins_inside(service: SearchService):
    results = _all(service)
    assert len(results) == len(service.chunks) >= 5
    inside = [r for r in results if r.fence is not None]
    assert len(inside) >= 3  # the middle chunks of the code block and its last one
    for result in results:
        assert result.fence == _fence_at_byte(result.position.byte_start) == result.position.fence
        shown = as_markdown(result.text, result.fence)
        assert fence_after(shown) is None  # every fence shown is closed again
        assert shown.startswith(OPENER) or result.fence is None


def test_a_text_widened_to_its_neighbours_names_the_fence_where_it_now_begins(service: SearchService):
    widened = [r for r in _all(service, expand="neighbors") if r.text]  # one text: the hits touch
    for code in (r for r in _all(service) if r.fence is not None):  # one hit at a time
        request = SearchRequest(query=code.text[:80], mode="keyword", top_k=1, filters=[], expand="neighbors")
        widened.extend(service.search(request).results)
    for result in widened:
        assert result.expanded is not None
        assert result.fence == _fence_at_byte(result.expanded.byte_start)
    assert any(r.fence == OPENER for r in widened)


def test_each_part_of_a_result_over_the_budget_names_the_fence_that_part_begins_in(service: SearchService):
    code = next(r for r in _all(service) if r.fence is not None and len(r.text) > 300)
    request = SearchRequest(query=code.text[:60], mode="keyword", top_k=1, filters=[], max_tokens=200)
    parts: list[SearchResult] = []
    while True:
        page = service.search(request)
        parts.extend(r for r in page.results if r.chunk_id == code.chunk_id)
        if page.next_cursor is None or len(parts) > 400:
            break
        request = request.model_copy(update={"cursor": page.next_cursor})
    assert len(parts) > 1 and "".join(p.text for p in parts) == code.text
    for part in parts:
        assert part.text_range is not None
        assert part.fence == fence_after(code.text[: part.text_range[0]], code.fence)


def test_mcp_search_shows_a_chunk_cut_inside_the_code_block_as_code(service: SearchService, tmp_path):
    import anyio

    from tests.integration.mcp_support import stdio_session, texts

    runs = service.layout.root.parent

    async def main() -> list[str]:
        async with stdio_session("--runs-dir", str(runs), "--run-id", service.run_id, cwd=tmp_path) as session:
            result = await session.call_tool("search_docs", {"query": "widget route step handler", "top_k": 50})
            assert not result.is_error, texts(result)
            return texts(result)[1:]

    blocks = anyio.run(main)
    middle = [b for b in blocks if "route step" in b and "def setup" not in b and "After the code" not in b]
    assert middle
    for block in middle:
        body = block.split("\n\n", 1)[1]
        assert body.startswith(OPENER + "\n") and body.endswith("\n```")
    assert all(fence_after(b) is None for b in blocks)
