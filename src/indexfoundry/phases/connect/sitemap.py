"""Sitemap discovery: urlsets, nested sitemap indexes, gzipped sitemaps, robots.txt ``Sitemap:``.

The result is deterministic: every page URL found is filtered (include/exclude regexes,
robots.txt), de-duplicated and sorted, and ``max_pages`` takes the first ones in that order,
so a site that reorders its sitemap still yields the same pages. XML is parsed with defusedxml
(no entity expansion, no external resources); gzip is decompressed with a size limit; index
nesting is bounded by ``MAX_DEPTH`` and cycles are ignored.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element
from xml.etree.ElementTree import ParseError as XmlParseError

import httpx
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from indexfoundry.errors import ConfigInvalid, FileTooLarge, IndexFoundryError, ParseError
from indexfoundry.phases.connect.net import Fetcher
from indexfoundry.phases.connect.robots import RobotsCache, origin_of

MAX_DEPTH = 3  # sitemap index -> sitemap index -> sitemap index -> urlset
MAX_SITEMAPS = 1000
MAX_URLS = 200_000
DEFAULT_MAX_PAGES = 100  # indexfoundry_connect_sitemap's default


@dataclass
class SitemapDiscovery:
    """Pages to fetch, and why the others were left out."""

    urls: list[str]
    discovered: int
    sitemaps: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # by include/exclude patterns
    disallowed: list[str] = field(default_factory=list)  # by robots.txt
    over_limit: list[str] = field(default_factory=list)  # past max_pages
    errors: list[tuple[str, IndexFoundryError]] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.excluded) + len(self.disallowed) + len(self.over_limit)


def compile_patterns(patterns: list[str], what: str) -> list[re.Pattern[str]]:
    """Compile user regexes, with CONFIG_INVALID naming the bad one."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigInvalid(
                f"{what}: '{pattern}' is not a valid regular expression: {exc}",
                suggestion="Fix the pattern (Python re syntax)",
            ) from None
    return compiled


def gunzip_limited(data: bytes, limit: int, url: str) -> bytes:
    """Decompress gzip ``data`` without ever producing more than ``limit`` bytes."""
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = decompressor.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ParseError(f"{url} is not valid gzip: {exc}", suggestion="Check the sitemap file") from None
    if len(out) > limit or decompressor.unconsumed_tail:
        raise FileTooLarge(
            f"{url} decompresses to more than {limit / 1048576:g} MB",
            suggestion="Raise connect.max_file_size_mb, or split the sitemap",
            details={"url": url, "limit_bytes": limit},
        )
    return out


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


def parse_sitemap(data: bytes, url: str) -> tuple[str, list[str]]:
    """``("urlset" | "sitemapindex", [loc, ...])`` of a sitemap document, in document order."""
    try:
        root: Element = fromstring(data, forbid_dtd=True)
    except (XmlParseError, DefusedXmlException, ValueError) as exc:
        raise ParseError(
            f"{url} is not a valid sitemap: {type(exc).__name__}: {exc}",
            suggestion="Check the sitemap URL (a sitemap is an XML urlset or sitemapindex)",
            details={"url": url},
        ) from None
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise ParseError(
            f"{url} is not a sitemap (root element <{kind}>)",
            suggestion="Point the source at a sitemap.xml, or at the site root to use robots.txt",
            details={"url": url},
        )
    locs = []
    for entry in root:
        for child in entry:
            if _local(child.tag) == "loc" and child.text and child.text.strip():
                locs.append(child.text.strip())
                break
    return kind, locs


def is_site_root(url: str) -> bool:
    """A sitemap source pointing at a site root or its robots.txt: discover through robots.txt."""
    path = httpx.URL(url).path
    return path in ("", "/") or path.endswith("/robots.txt")


def discover(
    fetcher: Fetcher,
    url: str,
    *,
    robots: RobotsCache,
    respect_robots: bool,
    include_patterns: list[str],
    exclude_patterns: list[str],
    max_pages: int | None,
    user_agent: str,
) -> SitemapDiscovery:
    """Every page URL of the sitemap at ``url`` that may be fetched, sorted, at most ``max_pages``."""
    include = compile_patterns(include_patterns, "include_patterns")
    exclude = compile_patterns(exclude_patterns, "exclude_patterns")
    limit = fetcher.policy.max_bytes
    errors: list[tuple[str, IndexFoundryError]] = []
    if is_site_root(url):
        rules = robots.rules(url)
        if rules.error is not None:
            raise rules.error
        roots = rules.sitemaps or [f"{origin_of(url)}/sitemap.xml"]
    else:
        roots = [url]
    seen_sitemaps: list[str] = []
    pages: dict[str, None] = {}
    stack: list[tuple[str, int]] = [(u, 0) for u in reversed(roots)]
    while stack:
        sitemap_url, depth = stack.pop()
        if sitemap_url in seen_sitemaps or len(seen_sitemaps) >= MAX_SITEMAPS:
            continue
        seen_sitemaps.append(sitemap_url)
        try:
            result = fetcher.get(sitemap_url, max_bytes=limit)
            data = result.body or b""
            if data[:2] == b"\x1f\x8b":
                data = gunzip_limited(data, limit, sitemap_url)
            kind, locs = parse_sitemap(data, sitemap_url)
        except IndexFoundryError as error:
            if sitemap_url in roots and len(roots) == 1:
                raise
            errors.append((sitemap_url, error))
            continue
        if kind == "sitemapindex":
            if depth >= MAX_DEPTH:
                errors.append(
                    (
                        sitemap_url,
                        ParseError(
                            f"{sitemap_url}: sitemap indexes nested deeper than {MAX_DEPTH} levels are not followed",
                            suggestion="Point the source at a nested sitemap directly",
                        ),
                    )
                )
                continue
            stack.extend((loc, depth + 1) for loc in reversed(locs))
        else:
            for loc in locs:
                if len(pages) >= MAX_URLS:
                    break
                pages.setdefault(loc, None)
    discovery = SitemapDiscovery(urls=[], discovered=len(pages), sitemaps=seen_sitemaps, errors=errors)
    candidates = []
    for page in sorted(pages):
        if (include and not any(p.search(page) for p in include)) or any(p.search(page) for p in exclude):
            discovery.excluded.append(page)
            continue
        if respect_robots:
            try:
                rules = robots.rules(page)
            except IndexFoundryError as error:
                discovery.errors.append((page, error))
                continue
            if not rules.allowed(page, user_agent):
                if rules.error is not None and not any(rules.error is e for _, e in discovery.errors):
                    discovery.errors.append((f"{rules.origin}/robots.txt", rules.error))
                discovery.disallowed.append(page)
                continue
        candidates.append(page)
    cap = DEFAULT_MAX_PAGES if max_pages is None else max_pages
    discovery.urls = candidates[:cap]
    discovery.over_limit = candidates[cap:]
    return discovery
