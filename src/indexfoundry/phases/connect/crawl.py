"""Crawl sources: follow links from a start URL, breadth-first, inside a scope.

Deterministic whatever the concurrency: pages are fetched one depth level at a time, each
level sorted; links found on a level are canonicalised (fragment and tracking parameters
dropped, default port removed), filtered (scope, include/exclude regexes, robots.txt, asset
extensions), de-duplicated and sorted into the next level. ``max_pages`` takes the first
pages in that order. A page's identity is its canonical URL: the final URL after redirects,
or its ``<link rel=canonical>`` when that is in scope, with a directory's ``index.html``
(``index.htm``) read as the directory itself, so a page reachable under two URLs (``/`` and
``/index.html``) is indexed once and the other counts as a duplicate. Every request goes
through the run's guarded :class:`~.net.Fetcher` (or the browser renderer, which uses the same
one), at most ``requests_per_second`` per host;
previously fetched pages are re-fetched conditionally and 404/410 become removals, as for
sitemaps.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from bs4 import BeautifulSoup, Tag

from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.config import CrawlSource
from indexfoundry.phases.connect.net import HttpStatusError
from indexfoundry.phases.connect.robots import RobotsCache
from indexfoundry.phases.connect.sitemap import compile_patterns
from indexfoundry.phases.connect.url import UrlJob, UrlResult
from indexfoundry.storage.layout import RunLayout

# Query parameters that only track where a visitor came from: never part of a page's identity.
TRACKING_PARAMS = frozenset(
    {"gclid", "dclid", "fbclid", "msclkid", "yclid", "mc_cid", "mc_eid", "_ga", "_gl", "igshid", "ref_src"}
)
TRACKING_PREFIXES = ("utm_",)
# Links to these are assets, not documents: never followed.
ASSET_EXTENSIONS = frozenset(
    {
        ".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".avif",
        ".bmp", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z",
        ".tar", ".whl", ".exe", ".dmg", ".iso", ".mp3", ".mp4", ".webm", ".ogg", ".wav", ".avi", ".mov",
        ".inv", ".pot", ".xml", ".rss", ".atom",
    }
)  # fmt: skip
_HTML_TYPES = ("text/html", "application/xhtml+xml")
FetchPage = Callable[[UrlJob], UrlResult]


def canonical_url(url: str, base: str | None = None) -> str | None:
    """``url`` (joined to ``base``) in canonical form, or ``None`` when it is not http(s).

    Lower-case scheme and host, no default port, no fragment, no tracking parameters, an
    empty path as ``/``; the remaining query keeps its order.
    """
    try:
        joined = urljoin(base, url.strip()) if base else url.strip()
        parts = urlsplit(joined)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != {"http": 80, "https": 443}[scheme]:
        host = f"{host}:{port}"
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k.lower() not in TRACKING_PARAMS and not k.lower().startswith(TRACKING_PREFIXES)
    ]
    return urlunsplit((scheme, host, parts.path or "/", urlencode(query), ""))


# A directory's default page: ``/guide/index.html`` is the page ``/guide/`` names.
_DIRECTORY_INDEX = re.compile(r"/index\.html?$", re.IGNORECASE)


def page_identity(url: str) -> str:
    """The page a canonical URL names, for de-duplication: a final ``index.html`` (or
    ``index.htm``) segment is its directory (the URL fetched stays as linked)."""
    parts = urlsplit(url)
    path = _DIRECTORY_INDEX.sub("/", parts.path)
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _host_of(url: str) -> str:
    return urlsplit(url).netloc


def default_prefix(start: str) -> str:
    """The (canonical) start URL up to and including the last ``/`` of its path."""
    head = start.partition("?")[0]
    return head[: head.rfind("/") + 1]


@dataclass
class PageLinks:
    """What a crawler needs from an HTML page."""

    links: list[str]
    canonical: str | None = None
    noindex: bool = False  # <meta name=robots content=noindex>: followed, not indexed


def page_links(html: bytes, page_url: str) -> PageLinks:
    """The links of an HTML page, canonicalised: ``<a href>``, a ``<meta http-equiv=refresh>``
    target and the ``<link rel=canonical>`` target.

    ``<base href>`` is honoured; ``rel=nofollow`` links are not followed.
    """
    soup = BeautifulSoup(html, "lxml")
    base = page_url
    base_tag = soup.find("base", href=True)
    if isinstance(base_tag, Tag):
        base = urljoin(page_url, str(base_tag["href"]))
    links: list[str] = []
    for anchor in soup.find_all(["a", "area"], href=True):
        if not isinstance(anchor, Tag):
            continue
        rel = anchor.get("rel")
        if "nofollow" in (rel if isinstance(rel, list) else [str(rel or "")]):
            continue
        target = canonical_url(str(anchor["href"]), base)
        if target is not None:
            links.append(target)
    out = PageLinks(links)
    for meta in soup.find_all("meta"):
        if not isinstance(meta, Tag):
            continue
        name = str(meta.get("name") or "").lower()
        content = str(meta.get("content") or "")
        if name == "robots" and "noindex" in content.lower():
            out.noindex = True
        if str(meta.get("http-equiv") or "").lower() == "refresh":
            match = re.search(r"url\s*=\s*['\"]?([^'\";]+)", content, re.IGNORECASE)
            target = canonical_url(match.group(1), base) if match else None
            if target is not None:
                links.append(target)
    for link in soup.find_all("link", href=True):
        if isinstance(link, Tag) and "canonical" in [str(r).lower() for r in (link.get("rel") or [])]:
            out.canonical = canonical_url(str(link["href"]), base)
            break
    return out


class HostRateLimiter:
    """At most ``per_second`` request starts per host (thread-safe, no busy waiting)."""

    def __init__(
        self,
        per_second: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._interval = 1.0 / per_second
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep

    def wait(self, url: str) -> None:
        host = _host_of(url)
        with self._lock:
            now = self._clock()
            slot = max(now, self._next.get(host, now))
            self._next[host] = slot + self._interval
        if slot > now:
            self._sleep(slot - now)


@dataclass
class CrawlReport:
    """Pages of one crawl, in crawl order, with what was left out and why."""

    results: list[UrlResult] = field(default_factory=list)
    errors: list[tuple[str, IndexFoundryError]] = field(default_factory=list)
    depth_reached: int = 0
    duplicates: list[str] = field(default_factory=list)  # fetched, but another URL had the same canonical page
    noindex: list[str] = field(default_factory=list)  # followed, not indexed (meta robots noindex)
    broken_links: list[str] = field(default_factory=list)  # linked, but 404/410 (never seen before)
    excluded: list[str] = field(default_factory=list)
    disallowed: list[str] = field(default_factory=list)
    over_limit: int = 0

    def summary(self) -> dict[str, int]:
        return {
            "pages": sum(1 for r in self.results if r.record is not None),
            "removed": sum(1 for r in self.results if r.status == "removed"),
            "errors": len(self.errors),
            "depth_reached": self.depth_reached,
            "duplicates": len(self.duplicates),
            "noindex": len(self.noindex),
            "broken_links": len(self.broken_links),
            "excluded": len(self.excluded),
            "disallowed": len(self.disallowed),
            "over_limit": self.over_limit,
        }


class Crawler:
    """Breadth-first crawl of one :class:`CrawlSource` with a page-fetching function."""

    def __init__(
        self,
        source: CrawlSource,
        layout: RunLayout,
        fetch_page: FetchPage,
        *,
        robots: RobotsCache | None,
        user_agent: str,
        concurrency: int,
    ) -> None:
        start = canonical_url(source.url)
        if start is None:
            raise ConfigInvalid(
                f"crawl source: '{source.url}' is not an absolute http(s) URL", suggestion="Use http:// or https://"
            )
        self.source = source
        self.start = start
        self.name = source.name or source.url
        self.layout = layout
        self.fetch_page = fetch_page
        self.robots = robots
        self.user_agent = user_agent
        self.concurrency = max(1, concurrency)
        self.prefix = canonical_url(source.prefix) if source.prefix else default_prefix(start)
        self.include = compile_patterns(source.include_patterns, "include_patterns")
        self.exclude = compile_patterns(source.exclude_patterns, "exclude_patterns")
        self.limiter = HostRateLimiter(source.requests_per_second)

    def in_scope(self, url: str) -> bool:
        if self.source.scope == "prefix":
            return url.startswith(self.prefix or self.start)
        return _host_of(url) == _host_of(self.start)

    def _wanted(self, url: str, report: CrawlReport) -> bool:
        """May ``url`` (canonical, in scope) be fetched? Records why not."""
        if PurePosixPath(urlsplit(url).path).suffix.lower() in ASSET_EXTENSIONS:
            return False
        if (self.include and not any(p.search(url) for p in self.include)) or any(p.search(url) for p in self.exclude):
            report.excluded.append(url)
            return False
        if self.robots is not None:
            try:
                rules = self.robots.rules(url)
            except IndexFoundryError as error:
                report.errors.append((url, error))
                return False
            if not rules.allowed(url, self.user_agent):
                if rules.error is not None and not any(rules.error is e for _, e in report.errors):
                    report.errors.append((f"{rules.origin}/robots.txt", rules.error))
                report.disallowed.append(url)
                return False
        return True

    def _fetch(self, url: str) -> UrlResult | IndexFoundryError:
        self.limiter.wait(url)
        try:
            return self.fetch_page(UrlJob(url, "crawl", self.name))
        except IndexFoundryError as error:
            return error

    def _body(self, result: UrlResult) -> bytes | None:
        record = result.record
        if record is None or not record.content_type.startswith(_HTML_TYPES):
            return None
        try:
            return (self.layout.root / record.path).read_bytes()
        except OSError:
            return None

    def run(self) -> CrawlReport:
        """Crawl; results come back in crawl order (depth, then URL)."""
        report = CrawlReport()
        seen: set[str] = {self.start}
        claimed: set[str] = set()  # canonical page URLs already indexed
        level = [self.start] if self.robots is None or self._wanted_start(report) else []
        depth = 0
        budget = self.source.max_pages
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="crawl") as pool:
            while level and budget > 0:
                report.depth_reached = depth
                batch, rest = level[:budget], level[budget:]
                report.over_limit += len(rest)
                outcomes = list(pool.map(self._fetch, batch))
                found: set[str] = set()
                for url, outcome in zip(batch, outcomes, strict=True):
                    if isinstance(outcome, IndexFoundryError):
                        if isinstance(outcome, HttpStatusError) and outcome.status in (404, 410) and depth > 0:
                            report.broken_links.append(url)  # a dead link on the site, not a failed document
                        else:
                            report.errors.append((url, outcome))
                        continue
                    body = self._body(outcome)
                    final = canonical_url(outcome.final_url) if outcome.final_url else None
                    identity = final if final is not None and self.in_scope(final) else url
                    page = page_links(body, identity) if body is not None else PageLinks([])
                    if page.canonical is not None and self.in_scope(page.canonical):
                        if page.noindex:
                            page.links.append(page.canonical)  # a redirect stub: its target is the page
                        else:
                            identity = page.canonical
                    if depth < self.source.max_depth:
                        found.update(link for link in page.links if link not in seen and self.in_scope(link))
                    if page.noindex:
                        report.noindex.append(url)
                        continue
                    if page_identity(identity) in claimed:
                        report.duplicates.append(url)
                        continue
                    claimed.add(page_identity(identity))
                    seen.add(identity)
                    if identity != url and outcome.record is not None:
                        outcome.record = outcome.record.model_copy(update={"uri": identity})
                        outcome.uri = identity
                    report.results.append(outcome)
                    if outcome.record is not None:
                        budget -= 1
                level = []
                for link in sorted(found):
                    seen.add(link)
                    if self._wanted(link, report):
                        level.append(link)
                depth += 1
                if depth > self.source.max_depth:
                    report.over_limit += len(level)
                    break
        report.errors.sort(key=lambda e: e[0])
        return report

    def _wanted_start(self, report: CrawlReport) -> bool:
        """The start URL is fetched unless robots.txt forbids it (patterns do not apply to it)."""
        assert self.robots is not None
        rules = self.robots.rules(self.start)
        if rules.allowed(self.start, self.user_agent):
            return True
        if rules.error is not None:
            report.errors.append((f"{rules.origin}/robots.txt", rules.error))
        report.disallowed.append(self.start)
        return False
