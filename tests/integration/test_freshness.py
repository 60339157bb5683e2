"""check_freshness: files by hash, URLs by conditional request, through every surface."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.surfaces.cli import app
from tests.conftest import SAMPLE_DOCS, write_tree
from tests.integration.connect_servers import body, serve_script
from tests.integration.http_support import live_server
from tests.integration.mcp_support import stdio_session, structured, texts

PAGE_A = (
    b"<html><head><title>A</title></head><body><main><h1>Alpha</h1><p>Alpha page text here.</p></main></body></html>"
)
PAGE_B = b"<html><head><title>B</title></head><body><main><h1>Beta</h1><p>Beta page text here.</p></main></body></html>"


@pytest.mark.slow
def test_check_freshness_names_exactly_the_edited_file_and_the_url_whose_etag_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    routes = {
        "/a.html": body(PAGE_A, "text/html", {"ETag": '"a1"'}),
        "/b.html": body(PAGE_B, "text/html", {"ETag": '"b1"'}),
    }
    with serve_script(routes) as site:
        config = {
            "connect": {
                "sources": [
                    {"type": "folder", "path": str(docs), "glob": "**/*.md"},
                    {"type": "url", "url": f"{site.base}/a.html"},
                    {"type": "url", "url": f"{site.base}/b.html"},
                ],
                "allowed_private_hosts": [f"127.0.0.1:{site.port}"],
            },
            "index": {"embedding_model": "hash"},
        }
        runs = tmp_path / "runs"
        out = api.pipeline_run(config, runs_dir=runs)
        assert out.status == "completed"
        fresh = api.check_freshness(out.run_id, runs_dir=runs)
        assert fresh.changed == [] and fresh.errors == [] and fresh.checked == fresh.sources == 5
        assert fresh.unchanged == 5
        # edit one file, and serve b.html anew under another ETag
        (docs / "guide" / "theme.md").write_text("# Theme\n\nNow dark by default.\n", encoding="utf-8")
        routes["/b.html"] = body(PAGE_B.replace(b"Beta page", b"Beta page, revised,"), "text/html", {"ETag": '"b2"'})
        report = api.check_freshness(out.run_id, runs_dir=runs)
        assert {(c.uri, c.status, c.how) for c in report.changed} == {
            ("docs/guide/theme.md", "changed", "hash"),
            (f"{site.base}/b.html", "changed", "etag"),
        }
        assert report.unchanged == 3 and all(c.fetched_at for c in report.changed)
        asked = [r for r in site.requests if r["path"] == "/a.html"][-1]
        assert asked["status"] == 304 and asked["headers"]["if-none-match"] == '"a1"'  # not sent again
        # a deleted file is gone; sampling checks a stated share, the same sources each time
        (docs / "index.md").unlink()
        gone = api.check_freshness(out.run_id, runs_dir=runs, uris=["docs/index.md"])
        assert [(c.uri, c.status) for c in gone.changed] == [("docs/index.md", "gone")]
        sampled = [api.check_freshness(out.run_id, runs_dir=runs, sample=0.4) for _ in range(2)]
        assert sampled[0].checked == 2 and sampled[0].sample == 0.4
        assert sampled[0].changed == sampled[1].changed
        # the CLI and the MCP tool say the same
        cli = CliRunner().invoke(app, ["run", "check-fresh", out.run_id, "--runs-dir", str(runs), "--json"])
        assert cli.exit_code == 0, cli.output
        assert {c["uri"] for c in json.loads(cli.stdout)["changed"]} == {
            "docs/guide/theme.md",
            "docs/index.md",
            f"{site.base}/b.html",
        }
        code = CliRunner().invoke(app, ["run", "check-fresh", out.run_id, "--runs-dir", str(runs), "--exit-code"])
        assert code.exit_code == 1
        # the HTTP endpoint, behind the key like the search endpoints, says the same
        monkeypatch.setenv("IF_FRESH_KEYS", "fresh-key-0123456789abcdef")
        server_args = {"require_auth": True, "api_keys_env": "IF_FRESH_KEYS"}
        with live_server(runs, out.run_id, **server_args) as server, server.client() as client:
            refused = client.post("/freshness", json={})
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "AUTH_REQUIRED"
            key = {"X-API-Key": "fresh-key-0123456789abcdef"}
            answer = client.post("/freshness", json={}, headers=key)
            assert answer.status_code == 200, answer.text
            assert {c["uri"] for c in answer.json()["changed"]} == {
                "docs/guide/theme.md",
                "docs/index.md",
                f"{site.base}/b.html",
            }
            only = client.post("/freshness", json={"uris": [f"{site.base}/b.html"]}, headers=key).json()
            assert [(c["uri"], c["how"]) for c in only["changed"]] == [(f"{site.base}/b.html", "etag")]
            share = client.post("/freshness", json={"sample": 0.4, "max_seconds": 5}, headers=key).json()
            assert share["checked"] == 2 and share["sample"] == 0.4
            assert share["changed"] == [c.model_dump(exclude_none=True) for c in sampled[0].changed]
            bad = client.post("/freshness", json={"max_seconds": 600}, headers=key)
            assert bad.status_code == 400 and bad.json()["error"]["code"] == "CONFIG_INVALID"
            spec = client.get("/openapi.json", headers=key).json()
            assert spec["paths"]["/api/v1/freshness"]["post"]["operationId"] == "check_freshness"

        async def main():
            async with stdio_session("--runs-dir", str(runs), cwd=tmp_path) as session:
                return await session.call_tool("check_freshness", {"run_id": out.run_id})

        result = anyio.run(main)
        assert not result.is_error, texts(result)
        assert len(structured(result)["changed"]) == 3


def test_a_url_the_network_policy_refuses_is_an_error_not_a_request(tmp_path: Path):
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    routes = {"/a.html": body(PAGE_A, "text/html", {"ETag": '"a1"'})}
    with serve_script(routes) as site:
        config = {
            "connect": {
                "sources": [
                    {"type": "folder", "path": str(docs), "glob": "**/*.md"},
                    {"type": "url", "url": f"{site.base}/a.html"},
                ],
                "allowed_private_hosts": [f"127.0.0.1:{site.port}"],
            },
            "index": {"embedding_model": "hash"},
        }
        runs = tmp_path / "runs"
        out = api.pipeline_run(config, runs_dir=runs)
        # the run's own policy is what checks use: edit it so the host is no longer allowed
        layout_config = runs / out.run_id / "config.json"
        data = json.loads(layout_config.read_text(encoding="utf-8"))
        data["connect"]["allowed_private_hosts"] = []
        layout_config.write_text(json.dumps(data), encoding="utf-8")
        before = len(site.requests)
        report = api.check_freshness(out.run_id, runs_dir=runs)
        assert [(e.uri, e.error) for e in report.errors] == [(f"{site.base}/a.html", "DOMAIN_BLOCKED")]
        assert len(site.requests) == before


def test_results_carry_the_fetch_time_and_in_docs_mode_say_when_their_file_changed(tmp_path: Path):
    from indexfoundry.surfaces.mcp.retrieval import FixedRuns, RetrievalTools
    from indexfoundry.surfaces.mcp.retrieval_models import SearchDocsInput

    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    runs = tmp_path / "runs"
    config = {
        "connect": {"sources": [{"type": "folder", "path": str(docs), "glob": "**/*.md"}]},
        "index": {"embedding_model": "hash"},
    }
    out = api.pipeline_run(config, runs_dir=runs)
    top = api.search("change the theme colours", out.run_id, runs_dir=runs, top_k=3).results
    assert all(r.fetched_at and len(r.source.content_hash) == 64 for r in top)
    tools = RetrievalTools(FixedRuns(runs, out.run_id), api.RunPool(runs), flag_changed=True)
    query = SearchDocsInput(query="change the theme colours", top_k=3)
    before = tools.search_docs(query)
    assert not any(h.changed for h in before.structured.results)  # type: ignore[attr-defined]
    (docs / "guide" / "theme.md").write_text("# Theme\n\nNow dark by default.\n", encoding="utf-8")
    after = tools.search_docs(query)
    flagged = {h.path for h in after.structured.results if h.changed}  # type: ignore[attr-defined]
    assert flagged == {"docs/guide/theme.md"}
    assert any("[changed since indexing]" in text for text in after.texts)


def test_a_docs_mode_server_flags_a_hit_whose_file_changed_while_its_rebuild_is_under_way(tmp_path: Path):
    """Through the docs-mode MCP server (official SDK client). A query after an edit normally waits
    for nothing: while a rebuild holds the docs index (simulated by holding its build lock from
    another thread, as the watcher's rebuild does), the previous run answers, and its hit from the
    edited file says so. Once the rebuild may run, the next answer is from a fresh run, unflagged."""
    from mcp.client import Client

    from indexfoundry.surfaces.mcp import ServerOptions, create_server

    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    server, _ = create_server(ServerOptions(runs_dir=tmp_path / "runs", docs=docs, embedding_model="hash", watch=False))
    index = server.retrieval.source  # the DocsIndex
    query = {"query": "change the theme colours", "top_k": 3}
    held, release = threading.Event(), threading.Event()

    def rebuild_under_way() -> None:
        with index._lock:
            held.set()
            release.wait(60)

    async def main() -> tuple[Any, Any, Any]:
        async with Client(server) as client:
            before = await client.call_tool("search_docs", query)
            (docs / "guide" / "theme.md").write_text("# Theme\n\nNow dark by default.\n", encoding="utf-8")
            builder = threading.Thread(target=rebuild_under_way)
            builder.start()
            held.wait(10)
            try:
                during = await client.call_tool("search_docs", query)
            finally:
                release.set()
                builder.join()
            return before, during, await client.call_tool("search_docs", query)

    before, during, after = anyio.run(main)
    assert not any(hit.get("changed") for hit in structured(before)["results"])
    assert structured(during)["run_id"] == structured(before)["run_id"]
    flagged = [hit["path"] for hit in structured(during)["results"] if hit.get("changed")]
    assert flagged == ["guide/theme.md"]
    assert any("[changed since indexing]" in text for text in texts(during))
    assert structured(after)["run_id"] != structured(before)["run_id"]
    assert not any(hit.get("changed") for hit in structured(after)["results"])
