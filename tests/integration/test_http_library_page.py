"""The search page of a server of many libraries (``serve start --library``) in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry import api
from tests.integration.test_http_libraries import serving
from tests.integration.test_http_web_page import ARGS, CHROMIUM, pytestmark  # noqa: F401
from tests.integration.test_mcp_libraries import _config, _docs


@pytest.mark.slow  # two pipeline runs, a server process and Chromium
def test_a_server_of_many_libraries_searches_them_all_and_labels_each_result(tmp_path: Path):
    """``serve start --library ...``: the page lists the library versions and searches
    /libraries/search (the single-run /search does not exist in that mode)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    runs = tmp_path / "runs"
    built = {
        ver: api.pipeline_run(_config(_docs(tmp_path, "widget", ver)), runs_dir=runs).run_id for ver in ("1.0", "2.0")
    }
    flags = [f"--library=widget@{ver}={run}" for ver, run in built.items()]
    with serving("--runs-dir", str(runs), *flags, "--no-rate-limit") as base:
        root = base.removesuffix("/api/v1")
        with playwright_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            try:
                context = browser.new_context()
                context.route(
                    "**/*", lambda route: route.continue_() if route.request.url.startswith(root) else route.abort()
                )
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.goto(root + "/")
                page.wait_for_selector("#served:has-text('library versions')")
                assert "widget 2.0" in page.inner_text("#served") and "widget 1.0" in page.inner_text("#served")
                page.fill("#query", "installer flux sprocket requirements")
                page.click("#search-button")
                page.wait_for_selector("#results li.result")
                labels = page.locator("#results li.result .library").all_inner_texts()
                assert labels and set(labels) <= {"widget 1.0", "widget 2.0"}
                assert "results in" in page.inner_text("#status")
                assert errors == []
            finally:
                browser.close()
