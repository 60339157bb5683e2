"""Remote sources of one run: sitemap discovery, then bounded-concurrency fetching into ``raw/``.

Used by the connect phase and by the single-purpose tools alike. Results and errors come back
sorted by URI, so logs and artifacts do not depend on which fetch finished first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import CrawlSource, RenderOptions
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect.browser import BrowserRenderer
from indexfoundry.phases.connect.crawl import Crawler, CrawlReport
from indexfoundry.phases.connect.net import Fetcher, FetchPolicy, HttpStatusError
from indexfoundry.phases.connect.report import FetchReport as FetchReport  # re-exported
from indexfoundry.phases.connect.robots import RobotsCache
from indexfoundry.phases.connect.sitemap import SitemapDiscovery, discover
from indexfoundry.phases.connect.url import UrlJob, UrlResult, fetch_url, reusable_artifact
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.layout import RunLayout

REMOTE_KINDS = frozenset({"url", "sitemap", "pdf", "crawl", "llms_txt"})


def load_raw_manifest(layout: RunLayout) -> list[RawRecord]:
    """The records of ``raw/raw_manifest.jsonl`` (none when the file does not exist)."""
    if not layout.raw_manifest.is_file():
        return []
    return [RawRecord.model_validate(row) for row in iter_jsonl(layout.raw_manifest)]


def previous_remote_state(layout: RunLayout, base: RunLayout | None) -> dict[str, RawRecord]:
    """ETag/Last-Modified state to revalidate against: the base run's, else this run's own."""
    records = load_raw_manifest(base if base is not None else layout)
    return {r.uri: r for r in records if r.source_kind in REMOTE_KINDS and "://" in r.uri}


def unique_jobs(jobs: Iterable[UrlJob]) -> list[UrlJob]:
    """One job per URI (the same page listed by two sources is fetched once), sorted by URI.

    The label kept for a duplicate is the smallest one, so reordering sources changes nothing.
    """
    chosen: dict[str, UrlJob] = {}
    for job in jobs:
        current = chosen.get(job.uri)
        key = (job.source_name, job.source_kind, job.expect_pdf)
        if current is None or key < (current.source_name, current.source_kind, current.expect_pdf):
            chosen[job.uri] = job
    return [chosen[uri] for uri in sorted(chosen)]


class RemoteConnector:
    """One guarded fetcher, robots cache and previous state for a run's remote sources."""

    def __init__(
        self,
        layout: RunLayout,
        policy: FetchPolicy,
        *,
        base: RunLayout | None = None,
        previous: dict[str, RawRecord] | None = None,
        respect_robots: bool = True,
        conditional: bool = True,
    ) -> None:
        self.layout = layout
        self.policy = policy
        self.base = base
        self.previous = previous if previous is not None else previous_remote_state(layout, base)
        self.respect_robots = respect_robots
        self.conditional = conditional
        self.fetcher = Fetcher(policy)
        self.robots = RobotsCache(self.fetcher)
        self.renderer: BrowserRenderer | None = None

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
        self.fetcher.close()

    def render_one(self, job: UrlJob, options: RenderOptions) -> UrlResult:
        """Render one page in the browser (``render: browser``), conditionally.

        The page's document is first requested through the guarded fetcher, with
        ``If-None-Match``/``If-Modified-Since`` when the previous state has validators: a 304
        reuses the previous rendering without starting a browser page; otherwise the body just
        fetched is handed to the browser as the document (it is not requested twice). A known
        page that now answers 404/410 is removed.
        """
        previous = self.previous.get(job.uri)
        reusable = (
            previous is not None
            and self.conditional
            and bool(previous.etag or previous.last_modified)
            and reusable_artifact(self.layout, self.base, previous)
        )
        headers: dict[str, str] = {}
        if reusable and previous is not None:
            if previous.etag:
                headers["If-None-Match"] = previous.etag
            if previous.last_modified:
                headers["If-Modified-Since"] = previous.last_modified
        try:
            document = self.fetcher.get(job.uri, headers=headers)
            if document.status == 304 and not reusable:
                document = self.fetcher.get(job.uri)  # a 304 to an unconditional request: ask plainly
        except HttpStatusError as error:
            if error.status in (404, 410) and previous is not None:
                return UrlResult(job.uri, "removed", None, utc_now())
            raise
        if document.status == 304 and previous is not None:
            record = previous.model_copy(
                update={
                    "source_kind": job.source_kind,
                    "source_name": job.source_name,
                    "etag": document.headers.get("etag") or previous.etag,
                    "last_modified": document.headers.get("last-modified") or previous.last_modified,
                }
            )
            return UrlResult(job.uri, "not_modified", record, utc_now(), document.attempts, document.final_url)
        if self.renderer is None:
            self.renderer = BrowserRenderer(self.fetcher, self.layout)
        try:
            return self.renderer.render(job, options, document)
        except HttpStatusError as error:
            if error.status in (404, 410) and previous is not None:
                return UrlResult(job.uri, "removed", None, utc_now())
            raise

    def render_all(
        self, jobs: list[tuple[UrlJob, RenderOptions]], on_done: Callable[[], None] | None = None
    ) -> FetchReport:
        """Render pages one after the other (one browser page at a time)."""
        report = FetchReport()
        self.layout.raw_dir.mkdir(parents=True, exist_ok=True)
        for job, options in sorted(jobs, key=lambda item: item[0].uri):
            try:
                report.results.append(self.render_one(job, options))
            except IndexFoundryError as error:
                report.errors.append((job.uri, error))
            if on_done is not None:
                on_done()
        return report

    def __enter__(self) -> RemoteConnector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def discover(
        self,
        url: str,
        *,
        max_pages: int | None,
        include_patterns: list[str],
        exclude_patterns: list[str],
    ) -> SitemapDiscovery:
        """Page URLs of a sitemap (see :func:`sitemap.discover`)."""
        return discover(
            self.fetcher,
            url,
            robots=self.robots,
            respect_robots=self.respect_robots,
            include_patterns=include_patterns,
            exclude_patterns=exclude_patterns,
            max_pages=max_pages,
            user_agent=self.policy.user_agent,
        )

    def crawl(self, source: CrawlSource) -> CrawlReport:
        """Crawl ``source`` (see :mod:`.crawl`), fetching each page conditionally."""
        self.layout.raw_dir.mkdir(parents=True, exist_ok=True)
        fetch: Callable[[UrlJob], UrlResult] = self.fetch_one
        if source.render == "browser":
            fetch = functools.partial(self.render_one, options=source)
        crawler = Crawler(
            source,
            self.layout,
            fetch,
            robots=self.robots if self.respect_robots else None,
            user_agent=self.policy.user_agent,
            concurrency=self.policy.concurrency,
        )
        return crawler.run()

    def fetch_one(self, job: UrlJob) -> UrlResult:
        """Fetch one URL (conditionally when it was fetched before); raises on failure."""
        return fetch_url(
            self.fetcher, self.layout, job, self.previous.get(job.uri), self.base, conditional=self.conditional
        )

    def keep_stale(self, errors: list[tuple[str, IndexFoundryError]]) -> list[RawRecord]:
        """Previous records of URLs that failed recoverably (timeout, 5xx, unreachable).

        A nightly rerun during a server hiccup keeps what it had (the error is still reported,
        the run ends ``partial``) instead of pruning those documents from the index.
        """
        kept = []
        for uri, error in errors:
            previous = self.previous.get(uri)
            if error.recoverable and previous is not None and reusable_artifact(self.layout, self.base, previous):
                kept.append(previous)
        return sorted(kept, key=lambda r: r.uri)

    def fetch_all(self, jobs: Iterable[UrlJob], on_done: Callable[[], None] | None = None) -> FetchReport:
        """Fetch ``jobs`` with at most ``policy.concurrency`` requests in flight."""
        unique = unique_jobs(jobs)
        report = FetchReport()
        if not unique:
            return report
        self.layout.raw_dir.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=self.policy.concurrency, thread_name_prefix="connect") as pool:
            futures = {pool.submit(self.fetch_one, job): job for job in unique}
            for future in as_completed(futures):
                job = futures[future]
                try:
                    report.results.append(future.result())
                except IndexFoundryError as error:
                    report.errors.append((job.uri, error))
                if on_done is not None:
                    on_done()
        report.results.sort(key=lambda r: r.uri)
        report.errors.sort(key=lambda e: e[0])
        return report
