"""llms_txt sources against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from indexfoundry.storage.atomic import iter_jsonl
from tests.integration.connect_servers import body, serve_script
from tests.integration.test_connect_sitemap import remote_config, rows, run_connect

LLMS = b"""# Widget

> Widget is a small library.

## Docs

- [Install](/docs/install.html): how to install
- [API](https://127.0.0.1:1/elsewhere.html): another host, not followed
- [Guide](/docs/guide/): the guide
- [Notes](/notes.md)
- [Install again](/docs/install.html#top)

## Optional

- [Changelog](/changelog.html)
"""


def _html(title: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{title} text.</p></body></html>".encode()


def test_llms_txt_pages_are_fetched_as_markdown_when_offered_and_as_html_otherwise(runs_dir: Path):
    routes = {
        "/llms.txt": body(LLMS, "text/plain", {"ETag": '"llms"'}),
        "/docs/install.html": body(_html("Install"), "text/html"),
        "/docs/install.html.md": body(b"# Install\n\nRun pip install widget.\n", "text/markdown", {"ETag": '"md"'}),
        "/docs/guide/": body(_html("Guide"), "text/html"),  # no markdown version
        "/notes.md": body(b"# Notes\n\nSome notes.\n", "text/markdown"),
        "/changelog.html": body(_html("Changelog"), "text/html"),
    }
    with serve_script(routes) as site:
        config = remote_config([{"type": "llms_txt", "url": f"{site.base}/"}])
        layout, phase = run_connect(runs_dir, config)
        asked = {r["path"] for r in site.requests}
        second, again = run_connect(runs_dir, config, base_layout=layout)
    base = site.base
    assert [r["uri"] for r in rows(layout)] == [
        f"{base}/changelog.html",
        f"{base}/docs/guide/",
        f"{base}/docs/install.html.md",
        f"{base}/llms.txt",
        f"{base}/notes.md",
    ]
    assert {r["content_type"] for r in rows(layout) if r["uri"].endswith(".md")} == {"text/markdown"}
    assert "/docs/install.html" not in asked and "/elsewhere.html" not in asked
    assert phase["details"]["llms_txt"][f"{base}/"] == {
        "linked": 4,
        "pages": 4,
        "markdown": 1,  # notes.md is markdown already
        "errors": 0,
        "over_limit": 0,
    }
    assert phase["errors"] == []
    assert again["stats"]["not_modified"] == 2  # the two with an ETag
    assert list(iter_jsonl(second.raw_manifest)) == list(iter_jsonl(layout.raw_manifest))


def test_an_llms_full_txt_is_one_document_and_a_missing_llms_txt_is_an_error(runs_dir: Path):
    routes = {"/llms-full.txt": body(b"# Widget\n\nEverything in one file. [Install](/install.html)\n", "text/plain")}
    with serve_script(routes) as site:
        full, _ = run_connect(runs_dir, remote_config([{"type": "llms_txt", "url": f"{site.base}/llms-full.txt"}]))
        assert "/install.html" not in {r["path"] for r in site.requests}
        missing, phase = run_connect(
            runs_dir, remote_config([{"type": "llms_txt", "url": f"{site.base}/docs/llms.txt"}])
        )
    assert [r["uri"] for r in rows(full)] == [f"{site.base}/llms-full.txt"]
    assert phase["errors"][0]["code"] == "FETCH_FAILED"  # then EMPTY_CONTENT: nothing fetched
    assert rows(missing) == []
