"""robots.txt: which crawled URLs may be fetched, and which sitemaps a site advertises.

Follows RFC 9309 for unavailable files: a 4xx (no robots.txt) allows everything; a 5xx or an
unreachable server disallows everything (the error is reported). Parsing and matching are
``urllib.robotparser``'s.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from urllib.robotparser import RobotFileParser

import httpx

from indexfoundry.errors import FetchFailed, FetchTimeout, IndexFoundryError
from indexfoundry.phases.connect.net import Fetcher, HttpStatusError

ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309 asks crawlers to parse at least 500 KiB


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``."""
    parsed = httpx.URL(url)
    default = {"http": 80, "https": 443}.get(parsed.scheme)
    port = f":{parsed.port}" if parsed.port is not None and parsed.port != default else ""
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{parsed.scheme}://{host}{port}"


@dataclass
class RobotsRules:
    """The rules of one origin."""

    origin: str
    parser: RobotFileParser
    sitemaps: list[str] = field(default_factory=list)
    error: IndexFoundryError | None = None

    def allowed(self, url: str, user_agent: str) -> bool:
        return self.parser.can_fetch(user_agent, url)


def _parser(allow_all: bool = False, disallow_all: bool = False) -> RobotFileParser:
    parser = RobotFileParser()
    parser.parse(["User-agent: *", "Disallow: /"] if disallow_all else [])
    parser.modified()
    return parser


def fetch_robots(fetcher: Fetcher, origin: str) -> RobotsRules:
    """Fetch and parse ``<origin>/robots.txt``."""
    url = f"{origin}/robots.txt"
    try:
        result = fetcher.get(url, max_bytes=ROBOTS_MAX_BYTES)
    except HttpStatusError:
        return RobotsRules(origin, _parser(allow_all=True))
    except (FetchFailed, FetchTimeout) as error:
        blocked = FetchFailed(
            f"robots.txt of {origin} is unavailable ({error.message}); crawling it is not allowed",
            recoverable=True,
            suggestion="Run again later, or set connect.respect_robots_txt: false if you may crawl the site",
            details={"url": url},
        )
        return RobotsRules(origin, _parser(disallow_all=True), error=blocked)
    text = (result.body or b"").decode("utf-8", errors="replace")
    parser = RobotFileParser(url)
    parser.parse(text.splitlines())
    parser.modified()
    return RobotsRules(origin, parser, sitemaps=list(parser.site_maps() or []))


class RobotsCache:
    """robots.txt per origin, fetched once per run (thread-safe)."""

    def __init__(self, fetcher: Fetcher) -> None:
        self._fetcher = fetcher
        self._rules: dict[str, RobotsRules] = {}
        self._lock = threading.Lock()

    def rules(self, url: str) -> RobotsRules:
        origin = origin_of(url)
        with self._lock:
            if origin not in self._rules:
                self._rules[origin] = fetch_robots(self._fetcher, origin)
            return self._rules[origin]
