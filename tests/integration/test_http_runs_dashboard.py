"""The runs dashboard in headless Chromium (Debian's chromium through Playwright) over a real server:
a pipeline run five times — an edit, a shrink refused with RUN_SHRANK, a recovery, an unchanged
night — with one evaluation recorded by ``indexfoundry eval --record``. The page's figures are
compared with the CLI's ``run list --json`` and ``run diff --format markdown --include-chunks``,
and its screenshots are checked (``INDEXFOUNDRY_UPDATE_SCREENSHOTS=1`` also writes them, made
small, to docs/images/ for the README)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from indexfoundry import api
from tests.conftest import folder_config, write_config, write_tree
from tests.integration.http_support import LiveServer, live_server
from tests.integration.test_http_web_page import ARGS, CHROMIUM

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "docs" / "images"
PAGES = {
    f"docs/page{n}.md": f"# Page {n}\n\n## Setting up part {n}\n\nHow to configure part {n} of the widget.\n\n"
    f"## Using part {n}\n\nCall `widget.part{n}()` once it is configured.\n"
    for n in range(6)
}
KEY = "dashboard-test-key-0123456789"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (scripts/setup.sh --dev installs it)",
)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "indexfoundry", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


@dataclass
class Scenario:
    runs_dir: Path
    run_ids: list[str]  # oldest first: first, edited, refused, recovered, unchanged
    listed: list[dict[str, Any]]  # run list --json, newest first


def five_nights(root: Path) -> Scenario:
    docs = write_tree(root / "docs", PAGES)
    config = write_config(root / "config.yaml", folder_config(docs))
    runs_dir = root / "runs"
    statuses = []

    def night() -> str:
        out = api.pipeline_run(config, runs_dir=runs_dir)
        statuses.append(out.status)
        return out.run_id

    ids = [night()]
    (docs / "docs/page1.md").write_text(PAGES["docs/page1.md"].replace("once it is", "after it is"), "utf-8")
    (docs / "docs/page6.md").write_text("# Page 6\n\nA new page about part 6.\n", "utf-8")
    ids.append(night())
    saved = {name: (docs / name).read_text("utf-8") for name in sorted(PAGES)[1:]}
    for name in saved:
        (docs / name).unlink()
    ids.append(night())  # loses 5 of 7 documents: refused
    for name, text in saved.items():
        (docs / name).write_text(text, "utf-8")
    ids.append(night())
    ids.append(night())
    assert statuses == ["completed", "completed", "failed", "completed", "completed"]
    (root / "queries.tsv").write_text("q1\tconfigure part 2 of the widget\nq2\tcall widget part4\n", "utf-8")
    (root / "qrels.tsv").write_text("q1\tdocs/docs/page2.md\t1\nq2\tdocs/docs/page4.md\t1\n", "utf-8")
    cli("eval", "--run-id", ids[3], "--runs-dir", runs_dir, "--queries", root / "queries.tsv",
        "--qrels", root / "qrels.tsv", "--mode", "keyword", "--record")  # fmt: skip
    listed = json.loads(cli("run", "list", "--runs-dir", runs_dir, "--json").stdout)["runs"]
    return Scenario(runs_dir, ids, listed)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return five_nights(tmp_path_factory.mktemp("dashboard"))


@pytest.fixture(scope="module")
def server(scenario: Scenario) -> Iterator[LiveServer]:
    with live_server(scenario.runs_dir, "latest") as live:
        yield live


@pytest.fixture(scope="module")
def page(server: LiveServer) -> Iterator[Any]:
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.route(
                "**/*",
                lambda route: route.continue_() if route.request.url.startswith(server.root) else route.abort(),
            )
            yield context.new_page()
        finally:
            browser.close()


def checked_screenshot(page: Any, path: Path, name: str) -> None:
    """A full-page screenshot that decodes, has the page's width and is not blank; with
    ``INDEXFOUNDRY_UPDATE_SCREENSHOTS=1`` also a small copy in docs/images/."""
    from PIL import Image

    page.screenshot(path=str(path), full_page=True)
    with Image.open(path) as image:
        assert image.format == "PNG" and image.width == 1280 and image.height >= 600
        colours = image.convert("RGB").resize((320, image.height // 4)).getcolors(maxcolors=100_000)
        assert colours is not None and len(colours) > 20  # text, badges and chart lines, not an empty page
        if os.environ.get("INDEXFOUNDRY_UPDATE_SCREENSHOTS") == "1":
            IMAGES.mkdir(parents=True, exist_ok=True)
            small = image.convert("RGB").resize((960, round(image.height * 960 / image.width)), Image.LANCZOS)
            small.quantize(colors=64).save(IMAGES / name, optimize=True)


def test_the_dashboard_shows_the_five_runs_with_the_figures_of_run_list_json(
    server: LiveServer, page: Any, scenario: Scenario, tmp_path: Path
):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.root + "/runs")
    page.wait_for_selector("section.pipeline .chart.size canvas")
    assert page.locator("section.pipeline").count() == 1
    assert {i["pipeline"] for i in scenario.listed} == {page.locator("section.pipeline").get_attribute("data-pipeline")}
    rows = page.locator("tr.run")
    assert rows.count() == 5
    shown = {}
    for n in range(rows.count()):
        row = rows.nth(n)
        shown[row.get_attribute("data-run-id")] = {
            "status": row.locator(".status").inner_text(),
            "created_at": row.get_attribute("data-created-at"),
            "chunks": int(row.locator(".chunks").inner_text()),
            "vectors": int(row.locator(".vectors").inner_text()),
            "errors": int(row.locator(".errors").inner_text()),
            "latest": row.locator(".latest").inner_text(),
        }
    assert set(shown) == set(scenario.run_ids)
    for item in scenario.listed:
        figures = shown[item["run_id"]]
        assert {k: figures[k] for k in ("status", "created_at", "chunks", "vectors", "errors")} == {
            "status": item["status"],
            "created_at": item["created_at"],
            "chunks": item.get("chunks", 0),
            "vectors": item.get("vectors", 0),
            "errors": item.get("errors", 0),
        }
    assert [rows.nth(n).get_attribute("data-run-id") for n in range(5)] == scenario.run_ids[::-1]  # newest first
    latest = api.resolve_run_id(scenario.runs_dir, "latest")
    assert latest == scenario.run_ids[4] and shown[latest]["latest"] == "latest"
    assert shown[scenario.run_ids[2]]["latest"] == "–"  # the refused run never became latest
    assert shown[scenario.run_ids[1]]["latest"] == "was latest"
    checked_screenshot(page, tmp_path / "runs.png", "runs-dashboard.png")
    assert errors == []


def test_the_refused_run_shows_its_reason_and_the_way_out(server: LiveServer, page: Any, scenario: Scenario):
    page.goto(server.root + "/runs")
    refusal = page.locator(f"tr.refusal[data-run-id='{scenario.run_ids[2]}']")
    refusal.wait_for()
    assert refusal.locator(".code").inner_text() == "RUN_SHRANK"
    text = refusal.inner_text()
    assert re.search(r"documents went from 7 in base run \S+ to 2", text), text
    assert "--allow-shrink" in refusal.locator(".suggestion").inner_text()
    assert page.locator("tr.refusal").count() == 1


def test_both_charts_are_drawn_from_the_runs_and_the_recorded_evaluation(server: LiveServer, page: Any):
    page.goto(server.root + "/runs")
    page.wait_for_selector(".chart.quality canvas")
    assert page.locator(".chart.size").get_attribute("data-points") == "5"
    assert page.locator(".chart.quality").get_attribute("data-points") == "1"
    assert page.locator(".chart.size .u-legend").inner_text().count("chunks") == 1
    assert "keyword" in page.locator(".chart.quality .u-legend").inner_text()
    recorded = httpx.get(server.api + "/dashboard/runs", timeout=30).json()["pipelines"][0]["runs"][3]["evals"]
    assert len(recorded) == 1 and set(recorded[0]["metrics"]) == {"keyword"}


def test_a_run_page_shows_its_diff_against_the_run_before_it_as_run_diff_markdown(
    server: LiveServer, page: Any, scenario: Scenario, tmp_path: Path
):
    first, edited = scenario.run_ids[:2]
    markdown = cli(
        "run", "diff", first, edited, "--runs-dir", scenario.runs_dir, "--format", "markdown", "--include-chunks"
    ).stdout
    page.goto(server.root + f"/runs/{edited}")
    page.wait_for_selector("#diff details")
    documents = page.locator("#diff details")
    assert documents.count() == markdown.count("<details>") == 2  # page1 modified, page6 added
    summaries = [documents.nth(n).locator("summary").inner_text() for n in range(documents.count())]
    assert summaries == ["modified: docs/docs/page1.md", "added: docs/docs/page6.md"]
    for uri in re.findall(r"<summary>\w+: <code>([^<]+)</code>", markdown):
        assert uri in page.inner_text("#diff")
    modified = documents.nth(0)
    assert not modified.locator("pre").first.is_visible()
    modified.locator("summary").click()
    shown = modified.locator("pre").first.inner_text()
    assert "-Call `widget.part1()` once it is configured." in shown
    assert "+Call `widget.part1()` after it is configured." in shown
    assert page.locator("dd[data-fact='chunks']").inner_text() == str(
        next(i for i in scenario.listed if i["run_id"] == edited)["chunks"]
    )
    checked_screenshot(page, tmp_path / "run.png", "run-diff.png")


def test_the_search_page_links_to_the_dashboard(server: LiveServer, page: Any):
    page.goto(server.root + "/")
    page.click("#runs-link")
    page.wait_for_selector("tr.run")
    assert page.url == server.root + "/runs"


def test_the_dashboard_data_needs_a_key_allowed_every_namespace(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"name": "docs-only", "key": "x" * 24, "namespaces": ["docs"]}]}), "utf-8")
    monkeypatch.setenv("IF_DASHBOARD_KEYS", KEY)
    with live_server(
        scenario.runs_dir, "latest", require_auth=True, api_keys_env="IF_DASHBOARD_KEYS", api_key_file=keys
    ) as server:
        assert httpx.get(server.root + "/runs", timeout=30).status_code == 200  # the static shell holds no data
        url = server.api + "/dashboard/runs"
        assert httpx.get(url, timeout=30).status_code == 401
        limited = httpx.get(url, headers={"X-API-Key": "x" * 24}, timeout=30)
        assert limited.status_code == 403 and limited.json()["error"]["code"] == "AUTH_REQUIRED"
        assert httpx.get(url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30).status_code == 200
        missing = httpx.get(f"{url}/{'0' * 8}-0000-7000-8000-{'0' * 12}", headers={"X-API-Key": KEY}, timeout=30)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "RUN_NOT_FOUND"
