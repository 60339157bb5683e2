"""llms.txt sources: a site's ``/llms.txt`` (https://llmstxt.org) and the pages it links.

The llms.txt file itself is stored (it is a summary of the site) and every markdown link in it
is followed, in the file's order, up to ``max_pages``; with ``same_host`` only links on the
file's host. A page that offers markdown (the convention: ``<page>.md``, ``<dir>/index.html.md``)
is stored as markdown under that URL; otherwise the page itself is fetched. An
``llms-full.txt`` URL is one document: nothing is followed. Every request goes through the
run's guarded fetcher, conditionally against the previous state (404/410 become removals).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.config import LlmsTxtSource
from indexfoundry.phases.connect.crawl import canonical_url
from indexfoundry.phases.connect.net import HttpStatusError
from indexfoundry.phases.connect.url import UrlJob, UrlResult
from indexfoundry.storage.layout import RunLayout

_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".mdx")


def index_url(url: str) -> str:
    """The llms.txt URL of a source URL: a site root means ``<root>/llms.txt``."""
    canonical = canonical_url(url)
    if canonical is None:
        raise ConfigInvalid(f"llms_txt source: '{url}' is not an absolute http(s) URL", suggestion="Use https://...")
    if urlsplit(canonical).path in ("", "/"):
        return canonical.rstrip("/") + "/llms.txt"
    return canonical


def linked_urls(text: str, base: str) -> list[str]:
    """Markdown link targets of an llms.txt, canonicalised, in file order, without repeats."""
    out: dict[str, None] = {}
    for match in _LINK.finditer(text):
        target = canonical_url(match.group(1), base)
        if target is not None and target != base:
            out.setdefault(target, None)
    return list(out)


def markdown_url(url: str) -> str | None:
    """Where a page's markdown version lives by the llms.txt convention (None: it is text already)."""
    path = urlsplit(url).path
    if PurePosixPath(path).suffix.lower() in _TEXT_SUFFIXES:
        return None
    head, sep, query = url.partition("?")
    return (head + ("index.html.md" if head.endswith("/") else ".md")) + (sep + query if sep else "")


@dataclass
class LlmsTxtReport:
    results: list[UrlResult] = field(default_factory=list)
    errors: list[tuple[str, IndexFoundryError]] = field(default_factory=list)
    linked: int = 0
    markdown: int = 0
    over_limit: int = 0

    def summary(self) -> dict[str, int]:
        return {
            "linked": self.linked,
            "pages": sum(1 for r in self.results[1:] if r.record is not None),
            "markdown": self.markdown,
            "errors": len(self.errors),
            "over_limit": self.over_limit,
        }


def read_llms_txt(
    source: LlmsTxtSource,
    layout: RunLayout,
    fetch_one: Callable[[UrlJob], UrlResult],
    concurrency: int,
) -> LlmsTxtReport:
    """Fetch the llms.txt of ``source`` and the pages it links."""
    name = source.name or source.url
    url = index_url(source.url)
    report = LlmsTxtReport()
    index = fetch_one(UrlJob(url, "llms_txt", name))
    report.results.append(index)
    if index.record is None or PurePosixPath(urlsplit(url).path).name.lower() == "llms-full.txt":
        return report
    text = (layout.root / index.record.path).read_text(encoding="utf-8", errors="replace")
    host = urlsplit(url).netloc
    links = [u for u in linked_urls(text, url) if not source.same_host or urlsplit(u).netloc == host]
    report.linked = len(links)
    report.over_limit = max(0, len(links) - source.max_pages)

    def page(link: str) -> list[UrlResult] | IndexFoundryError:
        results: list[UrlResult] = []
        alternative = markdown_url(link) if source.prefer_markdown else None
        if alternative is not None:
            try:
                found = fetch_one(UrlJob(alternative, "llms_txt", name))
            except HttpStatusError as error:
                if error.status not in (404, 410):
                    return error
            except IndexFoundryError as error:
                return error
            else:
                if found.record is not None and found.record.content_type.startswith(("text/markdown", "text/plain")):
                    return [found]
                if found.status == "removed":
                    results.append(found)  # it offered markdown before: drop that document
        try:
            results.append(fetch_one(UrlJob(link, "llms_txt", name)))
        except IndexFoundryError as error:
            return error
        return results

    selected = links[: source.max_pages]
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="llms") as pool:
        for link, outcome in zip(selected, pool.map(page, selected), strict=True):
            if isinstance(outcome, IndexFoundryError):
                report.errors.append((link, outcome))
                continue
            for result in outcome:
                if result.record is not None and result.uri != link:
                    report.markdown += 1
                report.results.append(result)
    return report
