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
    assert errors == []


def test_an_error_answer_is_shown_with_its_code(server: LiveServer, page: Any):
    page.goto(server.root + "/")
    page.fill("#query", "x" * 3000)  # over the server's query length limit
    page.click("#search-button")
    page.wait_for_selector("#status.error")
    assert page.inner_text("#status").startswith("CONFIG_INVALID")
    assert page.locator("#results li").count() == 0
