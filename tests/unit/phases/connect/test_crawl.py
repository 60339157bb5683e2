"""Crawl helpers: canonical URLs, page links, the per-host rate limit."""

from __future__ import annotations

import pytest

from indexfoundry.phases.connect.crawl import HostRateLimiter, canonical_url, default_prefix, page_links


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM:80/a/b.html#top", "http://example.com/a/b.html"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com:8443/x?utm_source=a&b=1&fbclid=2&UTM_medium=c", "https://example.com:8443/x?b=1"),
        ("mailto:someone@example.com", None),
        ("javascript:void(0)", None),
        ("ftp://example.com/file", None),
    ],
)
def test_canonical_url_drops_fragments_tracking_parameters_and_default_ports(url: str, expected: str | None):
    assert canonical_url(url) == expected


def test_relative_links_resolve_against_base_href_and_nofollow_links_are_not_followed():
    html = b"""<html><head><base href="/docs/v2/"><link rel="canonical" href="/docs/v2/page.html">
    <meta name="robots" content="noindex, follow"><meta http-equiv="refresh" content="0; url=moved.html"></head>
    <body><a href="a.html#x">a</a><a rel="nofollow" href="login.html">l</a><a href="../v1/">v1</a></body></html>"""
    page = page_links(html, "http://h.test/docs/v2/index.html")
    assert page.links == ["http://h.test/docs/v2/a.html", "http://h.test/docs/v1/", "http://h.test/docs/v2/moved.html"]
    assert page.canonical == "http://h.test/docs/v2/page.html"
    assert page.noindex is True


def test_the_default_prefix_is_the_start_url_up_to_its_last_slash():
    assert default_prefix("http://h.test/docs/intro.html?x=1") == "http://h.test/docs/"
    assert default_prefix("http://h.test/") == "http://h.test/"


def test_requests_to_one_host_are_spaced_by_the_rate_and_other_hosts_are_not_held_up():
    now = [100.0]
    waits: list[float] = []
    limiter = HostRateLimiter(4.0, clock=lambda: now[0], sleep=waits.append)
    for _ in range(3):
        limiter.wait("http://a.test/x")
    limiter.wait("http://b.test/x")
    assert waits == [0.25, 0.5]
