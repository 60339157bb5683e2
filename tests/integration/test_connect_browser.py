"""render: browser: pages rendered in Debian's Chromium through Playwright, every request the
browser makes answered by the guarded fetcher (real servers on 127.0.0.1)."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from indexfoundry.storage.atomic import iter_jsonl
from tests.integration.connect_servers import body, serve_script
from tests.integration.test_connect_sitemap import remote_config, rows, run_connect

pytestmark = [
    pytest.mark.skipif(
        not Path("/usr/bin/chromium").exists() or shutil.which("chromium") is None,
        reason="Debian's chromium is not installed (scripts/setup.sh --dev installs it)",
    ),
    pytest.mark.timeout(300),
]
pytest.importorskip("playwright.sync_api")


@contextmanager
def listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP port that records every connection made to it (nothing may reach it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.1)
    accepted: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(f"{peer[0]}:{peer[1]}")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join(2)
        sock.close()


def _js_page(trap_port: int) -> bytes:
    return f"""<!doctype html><html><head><title>Widget app</title></head><body>
<main id="app"><h1>Widget app</h1></main>
<script src="/app.js"></script>
<script>
  fetch("http://169.254.169.254/latest/meta-data/").catch(() => null);
  fetch("http://127.0.0.1:{trap_port}/secret").catch(() => null);
  new Image().src = "http://127.0.0.1:{trap_port}/pixel.png";
  const frame = document.createElement("iframe"); frame.src = "http://127.0.0.1:{trap_port}/frame";
  document.body.appendChild(frame);
  try {{ new WebSocket("ws://127.0.0.1:{trap_port}/ws"); }} catch (e) {{}}
  fetch("/api", {{method: "POST", body: "x"}}).catch(() => null);
  setTimeout(() => {{
    const late = document.createElement("p"); late.id = "late"; late.textContent = ["arrived", "late"].join(" ");
    document.getElementById("app").appendChild(late);
  }}, 300);
</script></body></html>""".encode()


APP_JS = b"""const p = document.createElement("p");
p.textContent = ["inserted", "by", "javascript"].join(" ");
document.getElementById("app").appendChild(p);"""


def test_a_javascript_page_is_empty_to_a_plain_fetch_and_full_when_rendered_and_its_ssrf_requests_are_refused(
    runs_dir: Path,
):
    """Also: the rendered page's document is fetched once (the browser is answered with it), and
    a run based on the rendered one revalidates it (304) without rendering it again."""
    with listener() as (trap_port, accepted):
        routes = {
            "/page.html": body(_js_page(trap_port), "text/html", {"ETag": '"v1"'}),
            "/app.js": body(APP_JS, "application/javascript"),
        }
        with serve_script(routes) as site:
            url = f"{site.base}/page.html"
            allowed = {"allowed_private_hosts": [f"127.0.0.1:{site.port}"], "allow_private_networks": False}
            allowed["timeout_ms"] = 20000  # Chromium starts within the first request's time
            plain, _ = run_connect(runs_dir, remote_config([{"type": "url", "url": url}], **allowed))
            source = {"type": "url", "url": url, "render": "browser", "wait_for_selector": "#late"}
            rendered, phase = run_connect(runs_dir, remote_config([source], **allowed))
            asked = [r["path"] for r in site.requests]
            again, revalidated = run_connect(runs_dir, remote_config([source], **allowed), base_layout=rendered)
            asked_again = [(r["path"], r["status"]) for r in site.requests[len(asked) :]]
    plain_html = (plain.root / rows(plain)[0]["path"]).read_bytes()
    rendered_html = (rendered.root / rows(rendered)[0]["path"]).read_bytes()
    assert b"inserted by javascript" not in plain_html and b"arrived late" not in plain_html
    assert b"inserted by javascript" in rendered_html and b"arrived late" in rendered_html
    assert rows(rendered)[0]["uri"] == url and rows(rendered)[0]["content_type"] == "text/html"
    assert phase["status"] == "completed" and phase["errors"] == []
    blocked = phase["details"]["browser"]["blocked"]
    assert "http://169.254.169.254/latest/meta-data/" in blocked
    assert f"http://127.0.0.1:{trap_port}/secret" in blocked
    assert f"http://127.0.0.1:{trap_port}/pixel.png" in blocked
    assert f"POST {site.base}/api" in blocked
    assert "/api" not in asked  # refused in the browser, never sent
    assert accepted == []  # nothing reached the trap port: not the fetch, image, iframe or WebSocket
    assert asked.count("/page.html") == 2  # the plain fetch, then once for the rendering
    assert rows(rendered)[0]["etag"] == '"v1"'
    assert asked_again == [("/page.html", 304)]  # revalidated: no script, no render
    assert revalidated["stats"]["not_modified"] == 1 and "browser" not in revalidated["details"]
    assert rows(again) == rows(rendered) and (again.root / rows(again)[0]["path"]).read_bytes() == rendered_html


def test_rendered_crawls_follow_links_inserted_by_javascript(runs_dir: Path):
    menu = b"""<html><body><nav id="nav"></nav><script>
      for (const name of ["b", "a"]) {
        const link = document.createElement("a"); link.href = "/" + name + ".html"; link.textContent = name;
        document.getElementById("nav").appendChild(link);
      }</script></body></html>"""
    routes = {
        "/": body(menu, "text/html"),
        "/a.html": body(b"<html><body><p>page a</p></body></html>", "text/html"),
        "/b.html": body(b"<html><body><p>page b</p></body></html>", "text/html"),
    }
    with serve_script(routes) as site:
        config = {"allowed_private_hosts": [f"127.0.0.1:{site.port}"], "timeout_ms": 20000}
        plain, _ = run_connect(runs_dir, remote_config([{"type": "crawl", "url": f"{site.base}/"}], **config))
        source = {"type": "crawl", "url": f"{site.base}/", "render": "browser", "wait_until": "load"}
        rendered, phase = run_connect(runs_dir, remote_config([source], **config))
    assert [r["uri"] for r in rows(plain)] == [f"{site.base}/"]
    assert [r["uri"] for r in iter_jsonl(rendered.raw_manifest)] == [
        f"{site.base}/{p}" for p in ("", "a.html", "b.html")
    ]
    assert phase["details"]["browser"]["pages"] == 3


def test_a_page_the_policy_blocks_is_never_rendered(runs_dir: Path):
    with listener() as (port, accepted):
        source = {"type": "url", "url": f"http://127.0.0.1:{port}/", "render": "browser"}
        layout, phase = run_connect(runs_dir, remote_config([source], allow_private_networks=False))
    assert phase["errors"][0]["code"] == "DOMAIN_BLOCKED"  # then EMPTY_CONTENT
    assert rows(layout) == [] and accepted == []
