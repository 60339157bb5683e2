"""Hostile sitemaps served over real HTTP (127.0.0.1) through the whole pipeline: a gzip bomb,
entity expansion, an external entity and a sitemap index that lists itself each fail alone,
in bounded time and memory, and the good sitemap's page is indexed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from indexfoundry import api
from indexfoundry.storage.layout import RunLayout
from tests.figures import documented
from tests.hostile.support import MB, bounded, everything_written
from tests.hostile.test_xml_attacks import LAUGHS_DTD, SECRET, _sitemap, _xxe_dtd
from tests.integration.connect_servers import body, serve_script

PAGE = (
    b"<html><head><title>Good page</title></head><body><h1>Good</h1><p>Indexed from the good sitemap.</p></body></html>"
)


def test_hostile_sitemaps_over_http_fail_alone_and_the_good_page_is_indexed(
    tmp_path: Path, runs_dir: Path, update_figures: bool
):
    seconds = 120
    peak_mb = 300
    loop_fetches = 2
    documented("hostile.sitemaps_http.seconds", seconds, update=update_figures)
    documented("hostile.sitemaps_http.peak_mb", peak_mb, update=update_figures)
    documented("hostile.sitemaps_http.loop_fetches", loop_fetches, update=update_figures)
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    routes = {
        "/page.html": body(PAGE, "text/html"),
        "/bomb.xml.gz": body(gzip.compress(b" " * (300 * MB), compresslevel=9), "application/gzip"),
        "/laughs.xml": body(_sitemap("<url><loc>http://x/&lol9;</loc></url>", LAUGHS_DTD), "application/xml"),
        "/xxe.xml": body(_sitemap("<url><loc>http://x/&xxe;</loc></url>", _xxe_dtd(secret)), "application/xml"),
    }
    with serve_script(routes) as served:
        base = served.base
        routes["/good.xml"] = body(_sitemap(f"<url><loc>{base}/page.html</loc></url>"), "application/xml")
        index = (
            '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<sitemap><loc>{base}/loop.xml</loc></sitemap><sitemap><loc>{base}/good.xml</loc></sitemap>"
            "</sitemapindex>"
        ).encode()
        routes["/loop.xml"] = body(index, "application/xml")  # an index that lists itself
        sources = [{"type": "sitemap", "url": f"{base}{path}"} for path in ("/bomb.xml.gz", "/laughs.xml", "/xxe.xml")]
        sources += [{"type": "sitemap", "url": f"{base}/loop.xml"}]
        config = {
            "connect": {"sources": sources, "allow_private_networks": True, "timeout_ms": 5000, "max_file_size_mb": 5},
            "extract": {"workers": 0},
            "index": {"embedding_model": "hash"},
        }
        with bounded(seconds=seconds, peak_mb=peak_mb):
            out = api.pipeline_run(config, runs_dir=runs_dir)
    layout = RunLayout(runs_dir / out.run_id)
    errors = [json.loads(line) for line in layout.errors_log.read_text().splitlines()]
    codes = {e["uri"].rsplit("/", 1)[-1]: e["code"] for e in errors}
    assert codes.get("bomb.xml.gz") == "FILE_TOO_LARGE"
    assert codes.get("laughs.xml") == "PARSE_ERROR"
    assert codes.get("xxe.xml") == "PARSE_ERROR"
    assert out.status == "partial"
    assert out.summary.chunks_indexed > 0  # the page of good.xml, reached through the looping index
    assert served.statuses("/loop.xml").count(200) <= loop_fetches  # the index listing itself is not crawled forever
    for path, data in everything_written(layout.root):
        assert SECRET.encode() not in data, path
