"""The search page in headless Chromium (Debian's chromium, driven by Playwright): type a query, see results."""

from __future__ import annotations

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
    with live_server(tmp_path / "runs", run_id) as live:
        context = page.context.browser.new_context()  # the module's browser, its own allow-list
        try:
            context.route(
                "**/*", lambda route: route.continue_() if route.request.url.startswith(live.root) else route.abort()
            )
            evil = context.new_page()
            evil.goto(live.root + "/?q=evil+words")
            evil.wait_for_selector("#results li.result")
            assert evil.evaluate("window.pwned") is None
            assert evil.locator("#results script, #results img[onerror]").count() == 0
            hrefs = evil.eval_on_selector_all("#results a", "els => els.map(e => e.getAttribute('href'))")
            assert not any(h and h.lower().startswith("javascript:") for h in hrefs)
        finally:
            context.close()


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
