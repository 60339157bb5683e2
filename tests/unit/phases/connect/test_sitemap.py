"""Sitemap parsing and safety limits."""

from __future__ import annotations

import gzip

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.phases.connect.sitemap import compile_patterns, gunzip_limited, is_site_root, parse_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def test_urlset_and_sitemapindex_locs_come_back_in_document_order():
    urlset = f"<urlset {NS}><url><loc> https://a/2 </loc><lastmod>x</lastmod></url><url><loc>https://a/1</loc></url></urlset>"
    assert parse_sitemap(urlset.encode(), "u") == ("urlset", ["https://a/2", "https://a/1"])
    index = f"<sitemapindex {NS}><sitemap><loc>https://a/s1.xml</loc></sitemap></sitemapindex>"
    assert parse_sitemap(index.encode(), "u") == ("sitemapindex", ["https://a/s1.xml"])


@pytest.mark.parametrize(
    "document",
    [
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><urlset>&b;</urlset>',
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]><urlset>&x;</urlset>',
        b"<html><body>not a sitemap</body></html>",
        b"<urlset><url><loc>unterminated",
    ],
)
def test_entity_tricks_and_non_sitemaps_are_parse_errors(document: bytes):
    with pytest.raises(IndexFoundryError) as caught:
        parse_sitemap(document, "http://x/sitemap.xml")
    assert caught.value.code == "PARSE_ERROR"


def test_gzip_is_decompressed_up_to_the_limit_and_no_further():
    data = gzip.compress(b"x" * 100_000)
    assert gunzip_limited(data, 100_000, "u") == b"x" * 100_000
    with pytest.raises(IndexFoundryError) as caught:
        gunzip_limited(gzip.compress(b"\0" * 5_000_000), 1_000_000, "u")  # a small bomb
    assert caught.value.code == "FILE_TOO_LARGE"
    with pytest.raises(IndexFoundryError) as bad:
        gunzip_limited(b"\x1f\x8bnot gzip", 10, "u")
    assert bad.value.code == "PARSE_ERROR"


def test_site_roots_and_robots_urls_are_discovered_through_robots_txt():
    assert is_site_root("https://example.org") and is_site_root("https://example.org/")
    assert is_site_root("https://example.org/robots.txt")
    assert not is_site_root("https://example.org/sitemap.xml")


def test_an_invalid_pattern_is_config_invalid():
    with pytest.raises(IndexFoundryError) as caught:
        compile_patterns(["(unclosed"], "include_patterns")
    assert caught.value.code == "CONFIG_INVALID"
