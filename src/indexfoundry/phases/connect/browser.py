"""``render: browser``: pages rendered in headless Chromium (Playwright, Debian's ``chromium``).

The browser never touches the network itself. Every request a page makes is intercepted
(``context.route``) and answered by the run's guarded :class:`~.net.Fetcher`: the same
allowed/blocked domains, address checks (loopback, private, link-local, metadata), redirect
checks on every hop, size limits and timeouts as a plain fetch. A refused request is aborted
and listed; only GET/HEAD are answered; WebSockets are closed unconnected; service workers,
downloads and popups are off; Chromium's own resolver maps every name to nothing and WebRTC
may not use UDP, so a request that escaped interception could not connect either.

Playwright's sync API is bound to one thread, so renders run on one worker thread, one page at
a time; callers on other threads (the crawler's pool) wait for their turn.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexfoundry.errors import ConfigInvalid, DomainBlocked, FetchFailed, FetchTimeout, FileTooLarge, IndexFoundryError
from indexfoundry.models.config import RenderOptions
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect.net import Fetcher, FetchResult, HttpStatusError
from indexfoundry.phases.connect.url import UrlJob, UrlResult
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.layout import RunLayout

CHROMIUM = "/usr/bin/chromium"
ENV_CHROMIUM = "INDEXFOUNDRY_CHROMIUM"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--no-pings",
    "--dns-prefetch-disable",
    # Requests are answered by the interceptor; anything else has no address to go to.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
]
# Response headers passed back to the page (the body is already decoded; lengths are recomputed).
_PASSED_HEADERS = frozenset({"content-type", "cache-control", "last-modified", "etag", "content-language"})
_REQUEST_HEADERS = frozenset({"accept", "accept-language", "content-type"})


def chromium_path() -> str:
    return os.environ.get(ENV_CHROMIUM) or CHROMIUM


@dataclass
class RenderLog:
    """Requests the browser made that the policy refused or that failed (for the manifest)."""

    blocked: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    pages: int = 0

    def summary(self) -> dict[str, Any]:
        return {"pages": self.pages, "blocked": sorted(self.blocked), "failed": sorted(self.failed)}


class BrowserRenderer:
    """One Chromium for a run's rendered pages; ``render`` may be called from any thread."""

    def __init__(self, fetcher: Fetcher, layout: RunLayout) -> None:
        self.fetcher = fetcher
        self.layout = layout
        self.log = RenderLog()
        self._jobs: queue.Queue[tuple[Callable[[], UrlResult], Future[UrlResult]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._start_error: IndexFoundryError | None = None
        self._lock = threading.Lock()
        self._browser: Any = None
        # The page being rendered and its document, already fetched (answered without a request).
        self._document: tuple[str, FetchResult] | None = None

    # ------------------------------------------------------------------ worker thread
    def _ensure_started(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="browser", daemon=True)
                self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            raise self._start_error

    def _work(self) -> None:
        try:
            from playwright.sync_api import Error as PlaywrightError
            from playwright.sync_api import sync_playwright
        except ImportError:
            self._start_error = ConfigInvalid(
                "render: browser needs Playwright, which is not installed",
                suggestion="pip install 'indexfoundry[browser]' (uses Debian's chromium; never 'playwright install')",
            )
            self._started.set()
            return
        executable = chromium_path()
        if not Path(executable).is_file():
            self._start_error = ConfigInvalid(
                f"render: browser needs Chromium at {executable}",
                suggestion=f"apt-get install chromium, or set {ENV_CHROMIUM} to its path",
            )
            self._started.set()
            return
        try:
            with sync_playwright() as pw:
                try:
                    self._browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
                except PlaywrightError as exc:
                    self._start_error = ConfigInvalid(
                        f"cannot start Chromium: {str(exc).splitlines()[0]}", suggestion="Check the chromium package"
                    )
                    return
                self._started.set()
                while (item := self._jobs.get()) is not None:
                    call, future = item
                    try:
                        future.set_result(call())
                    except BaseException as exc:  # handed to the caller's thread
                        future.set_exception(exc)
                self._browser.close()
        finally:
            self._started.set()

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(60)

    # ------------------------------------------------------------------ rendering
    def render(self, job: UrlJob, options: RenderOptions, document: FetchResult | None = None) -> UrlResult:
        """Render ``job.uri`` and store the resulting DOM as HTML in ``raw/``.

        ``document`` is the page's own response, already fetched through the guard: the
        browser's navigation to ``job.uri`` is answered with it (when it came without
        redirects), and its ETag/Last-Modified go into the record for the next conditional check.
        """
        self._ensure_started()
        future: Future[UrlResult] = Future()
        self._jobs.put((lambda: self._render(job, options, document), future))
        return future.result()

    def _route(self, route: Any) -> None:
        request = route.request
        url = str(request.url)
        if request.method not in ("GET", "HEAD"):
            self.log.blocked.add(f"{request.method} {url}")
            route.abort("blockedbyclient")
            return
        headers = {k: v for k, v in request.headers.items() if k.lower() in _REQUEST_HEADERS}
        known = self._document
        main_document = request.is_navigation_request() and request.frame.parent_frame is None
        if known is not None and known[0] == url and main_document:
            self._document = None  # once: a reload or a later navigation is fetched
            passed = {k: v for k, v in known[1].headers.items() if k.lower() in _PASSED_HEADERS}
            route.fulfill(status=200, headers=passed, body=known[1].body or b"")
            return
        try:
            result = self.fetcher.get(url, headers=headers)
        except DomainBlocked:
            self.log.blocked.add(url)
            route.abort("blockedbyclient")
            return
        except HttpStatusError as error:
            route.fulfill(status=error.status, body=b"")
            return
        except IndexFoundryError:
            self.log.failed.add(url)
            route.abort("failed")
            return
        passed = {k: v for k, v in result.headers.items() if k.lower() in _PASSED_HEADERS}
        route.fulfill(status=200, headers=passed, body=result.body or b"")

    def _render(self, job: UrlJob, options: RenderOptions, document: FetchResult | None = None) -> UrlResult:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        from indexfoundry.phases.connect import store_raw_bytes

        policy = self.fetcher.policy
        timeout_ms = policy.timeout_s * 1000
        context = self._browser.new_context(
            service_workers="block", accept_downloads=False, user_agent=policy.user_agent, java_script_enabled=True
        )
        if document is not None and not document.redirects and document.body is not None:
            self._document = (job.uri, document)
        try:
            context.set_default_timeout(timeout_ms)
            context.route("**/*", self._route)
            context.route_web_socket("**/*", lambda ws: ws.close())
            page = context.new_page()
            context.on("page", lambda popup: popup.close())
            page.on("download", lambda download: download.cancel())
            try:
                response = page.goto(job.uri, wait_until=options.wait_until, timeout=timeout_ms)
                if options.wait_for_selector:
                    page.wait_for_selector(options.wait_for_selector, timeout=timeout_ms)
                html = page.content().encode("utf-8")
            except PlaywrightTimeout:
                raise FetchTimeout(
                    f"rendering {job.uri} timed out after {policy.timeout_s:g} s",
                    suggestion="Raise connect.timeout_ms, or wait for a selector instead of network idle",
                    details={"url": job.uri},
                ) from None
            except PlaywrightError as exc:
                if job.uri in self.log.blocked:
                    raise DomainBlocked(
                        f"refusing to render {job.uri}: the network policy blocks it",
                        suggestion="See connect.allowed_private_hosts / allowed_domains",
                        details={"url": job.uri, "reason": "render_blocked"},
                    ) from None
                raise FetchFailed(
                    f"rendering {job.uri} failed: {str(exc).splitlines()[0]}",
                    suggestion="Check the URL",
                    details={"url": job.uri},
                ) from None
            status = response.status if response is not None else 200
            if status >= 400:
                raise HttpStatusError(job.uri, status)
            if len(html) > policy.max_bytes:
                raise FileTooLarge(
                    f"rendered {job.uri} is {len(html) / 1048576:.1f} MB, "
                    f"over the {policy.max_bytes / 1048576:g} MB limit",
                    suggestion="Raise connect.max_file_size_mb",
                    details={"url": job.uri, "limit_bytes": policy.max_bytes},
                )
            final_url = page.url
        finally:
            self._document = None
            context.close()
        digest, target = store_raw_bytes(self.layout, html, "html")
        self.log.pages += 1
        record = RawRecord(
            uri=job.uri,
            sha256=digest,
            size_bytes=len(html),
            content_type="text/html",
            ext="html",
            path=target.relative_to(self.layout.root).as_posix(),
            source_kind=job.source_kind,
            source_name=job.source_name,
            etag=document.headers.get("etag") if document is not None else None,
            last_modified=document.headers.get("last-modified") if document is not None else None,
        )
        return UrlResult(job.uri, "fetched", record, utc_now(), 1, final_url)
