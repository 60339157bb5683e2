"""Sitemap parsing and safety limits, and the PDF facts helper."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.phases.connect.pdf import pdf_date_to_iso, pdf_info
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


@pytest.mark.parametrize(
    ("raw", "iso"),
    [
        ("D:20080424142424+09'00'", "2008-04-24T14:24:24+09:00"),
        ("D:20201002001208Z", "2020-10-02T00:12:08Z"),
        ("D:20150722100404Z00'00'", "2015-07-22T10:04:04Z"),
        ("D:2021", "2021-01-01T00:00:00"),
        ("", None),
        ("yesterday", None),
    ],
)
def test_pdf_dates_become_iso_8601(raw: str, iso: str | None):
    assert pdf_date_to_iso(raw) == iso


def test_pdf_info_of_an_encrypted_or_broken_pdf_is_a_parse_error(corpora: Path):
    with pytest.raises(IndexFoundryError) as encrypted:
        pdf_info(corpora / "pdf/edge/password.pdf")
    assert encrypted.value.code == "PARSE_ERROR" and encrypted.value.details["encrypted"]
    with pytest.raises(IndexFoundryError) as broken:
        pdf_info(corpora / "pdf/edge/invalid.pdf")
    assert broken.value.code == "PARSE_ERROR"
