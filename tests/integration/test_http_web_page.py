"""The search page in headless Chromium (Debian's chromium, driven by Playwright): type a query, see results."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.http_support import LiveServer, live_server, make_run

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (scripts/setup.sh --dev installs it)",
)


@contextlib.contextmanager
def local_only_page(page: Any, root: str) -> Iterator[Any]:
    """A new page of the module's browser in its own context, which fetches nothing outside ``root``."""
    context = page.context.browser.new_context()
    try:
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(root) else route.abort())
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("page")
    run_id = make_run(root)
    with live_server(root / "runs", run_id) as live:
        yield live


@pytest.fixture(scope="module")
def page(server: LiveServer) -> Iterator[Any]:
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            context = browser.new_context()
            # Only the server under test may be reached.
            context.route(
                "**/*",
                lambda route: route.continue_() if route.request.url.startswith(server.root) else route.abort(),
            )
            yield context.new_page()
        finally:
            browser.close()


def test_typing_a_query_shows_results_with_source_breadcrumb_and_score(server: LiveServer, page: Any):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.root + "/")
    page.wait_for_selector("#served:has-text('documents')")
    page.fill("#query", "change the theme colours")
    page.click("#search-button")
    page.wait_for_selector("#results li.result")
    first = page.locator("#results li.result").first
    assert first.locator(".source").inner_text() == "docs/guide/theme.md"
    assert "Theme" in first.locator(".crumb").inner_text()
    score = float(first.locator(".score").inner_text())
    assert 0 < score <= 1
    assert "results in" in page.inner_text("#status")
    assert "reciprocal rank fusion" in page.inner_text("#scores")  # hybrid is the default, explained
    assert errors == []


def test_result_markdown_is_rendered_safely_with_terms_highlighted_and_the_query_in_the_url(
    server: LiveServer, page: Any, tmp_path: Path
):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.root + "/?q=install+pip")
    page.wait_for_selector("#results li.result")
    assert page.input_value("#query") == "install pip"  # a shared ?q= link runs its search
    assert page.input_value("#mode") == "hybrid"
    text = page.locator("#results li.result .text").first
    assert "##" not in text.inner_text()  # headings rendered, not shown as raw markdown
    assert page.locator("#results mark").count() > 0
    assert {m.lower() for m in page.locator("#results mark").all_inner_texts()} <= {"install", "pip"}
    page.fill("#query", "theme colours")
    page.click("#search-button")
    page.wait_for_function("new URL(location.href).searchParams.get('q') === 'theme colours'")
    page.screenshot(path=str(tmp_path / "search-page.png"), full_page=True)
    assert errors == []


def test_hostile_markdown_in_a_result_runs_no_script(page: Any, tmp_path: Path):
    docs = {
        "evil.md": '# Evil\n\nClick <img src=x onerror="window.pwned=1"> [me](javascript:window.pwned=2) '
        "<script>window.pwned=3</script> evil words\n"
    }
    run_id = make_run(tmp_path, docs)
    with live_server(tmp_path / "runs", run_id) as live, local_only_page(page, live.root) as evil:
        evil.goto(live.root + "/?q=evil+words")
        evil.wait_for_selector("#results li.result")
        assert evil.evaluate("window.pwned") is None
        assert evil.locator("#results script, #results img[onerror]").count() == 0
        hrefs = evil.eval_on_selector_all("#results a", "els => els.map(e => e.getAttribute('href'))")
        assert not any(h and h.lower().startswith("javascript:") for h in hrefs)


def test_the_page_answers_head(server: LiveServer):
    import httpx

    response = httpx.head(server.root + "/", timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")


def test_an_error_answer_is_shown_with_its_code(server: LiveServer, page: Any):
    page.goto(server.root + "/")
    page.fill("#query", "x" * 3000)  # over the server's query length limit
    page.click("#search-button")
    page.wait_for_selector("#status.error")
    assert page.inner_text("#status").startswith("CONFIG_INVALID")
    assert page.locator("#results li").count() == 0


def test_only_whole_query_terms_are_highlighted_never_stop_words_or_fragments(server: LiveServer, page: Any):
    page.goto(server.root + "/?q=how+do+I+change+the+theme+to+dark")
    page.wait_for_selector("#results li.result mark")
    marked = {m.lower() for m in page.locator("#results mark").all_inner_texts()}
    assert marked and marked <= {"change", "theme", "themes", "dark"}, marked
    # Each mark is a whole word: no letter or digit touches it on either side.
    glued = page.evaluate(
        """() => Array.from(document.querySelectorAll('#results mark')).filter((m) => {
            const before = (m.previousSibling && m.previousSibling.textContent) || '';
            const after = (m.nextSibling && m.nextSibling.textContent) || '';
            return /[\\p{L}\\p{N}]$/u.test(before) || /^[\\p{L}\\p{N}]/u.test(after);
        }).length"""
    )
    assert glued == 0


def test_a_snippet_cut_inside_a_code_block_still_renders_its_code_as_code(page: Any, tmp_path: Path):
    code = "\n".join(f"widget.configure(part={n}, colour='blue')  # step {n}" for n in range(30))
    docs = {"code.md": f"# Code\n\nIntro about the widget.\n\n```python\n{code}\n```\n\nAfter the code, prose.\n"}
    run_id = make_run(tmp_path, docs, normalize={"chunk_strategy": "recursive", "max_chars": 400})
    with live_server(tmp_path / "runs", run_id) as live, local_only_page(page, live.root) as view:
        view.goto(live.root + "/?q=widget+configure+step&mode=keyword")
        view.wait_for_selector("#results li.result")
        texts = view.locator("#results li.result .text")
        shown = [texts.nth(n).inner_text() for n in range(texts.count())]
        assert shown and not any("```" in t for t in shown)  # no fence shown as text
        codes = view.locator("#results li.result .text pre code").all_inner_texts()
        assert any("part=0," in c for c in codes)  # the first chunk ends inside the block
        last = next(n for n, t in enumerate(shown) if "After the code" in t)
        assert "part=29," in texts.nth(last).locator("pre code").inner_text()  # the last begins inside it
        assert "After the code" in texts.nth(last).locator("p").last.inner_text()


def test_every_chunk_of_a_real_long_code_block_renders_as_code_in_its_language(
    page: Any, tmp_path: Path, corpora: Path
):
    import httpx

    # Starlette's endpoints page: its longest Python block (routes of an app) is cut into chunks
    # that begin and end inside it.
    source = corpora / "markdown" / "starlette-1.10.0" / "docs" / "endpoints.md"
    docs: dict[str, str | bytes] = {"endpoints.md": source.read_text(encoding="utf-8")}
    run_id = make_run(tmp_path, docs, normalize={"chunk_strategy": "recursive", "max_chars": 250, "overlap_chars": 0})
    query = "HTTPEndpoint PlainTextResponse request Route username"
    with live_server(tmp_path / "runs", run_id) as live:
        answer = httpx.post(live.api + "/search/keyword", json={"query": query, "top_k": 30}, timeout=60)
        assert answer.status_code == 200, answer.text
        results = answer.json()["results"]
        inside = [n for n, r in enumerate(results) if r.get("fence")]
        assert len(inside) >= 2 and {results[n]["fence"] for n in inside} == {"```python"}
        with local_only_page(page, live.root) as view:
            view.goto(live.root + "/?mode=keyword")
            view.fill("#query", query)
            view.fill("#top-k", "30")
            view.click("#search-button")
            view.wait_for_selector("#results li.result")
            texts = view.locator("#results li.result .text")
            assert texts.count() == len(results)
            for n in range(len(results)):
                assert "```" not in texts.nth(n).inner_text()  # no fence shown as text
            for n in inside:
                first = results[n]["text"].strip().split("\n")[0].strip()
                code = texts.nth(n).locator("pre code").first
                assert first in code.inner_text()  # the chunk's first line is code, not a paragraph
                assert "language-python" in (code.get_attribute("class") or "")
                paragraphs = " ".join(texts.nth(n).locator("p").all_inner_texts())
                assert first not in paragraphs
