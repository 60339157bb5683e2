"""The connect phase's single-purpose tools: ``indexfoundry_connect_url``, ``_sitemap``, ``_folder``, ``_pdf``,
``_crawl``, ``_repo`` and ``_llms_txt``.

Each writes into an existing run: artifacts into ``raw/``, records merged into
``raw/raw_manifest.jsonl`` (one record per uri, sorted), under the run lock. When the run's
connect phase has completed, its manifest entry is updated to list the new artifacts, so the
next ``pipeline run --run-id`` keeps connect and re-plans extract from the changed raw files.

Security stays with the run: the SSRF policy (blocked domains, private networks, size limit)
comes from the run's frozen config and the global config; tool arguments can only narrow it
(``allowed_domains`` is intersected, never widened). A caller may pass ``network``
(:class:`NetworkBounds`, an agent's allowances): the run's private-network allowances are
narrowed to it and the run's ``headers_env`` is not sent (a ``FetchGrant`` brings a fetch
connection's headers, for its hosts only), so an agent cannot reach a private host or carry a
credential through an operator's run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import Field, field_validator

from indexfoundry.app.tools.registry import tool
from indexfoundry.errors import FetchFailed, IndexFoundryError
from indexfoundry.models.base import Strict
from indexfoundry.models.config import (
    CrawlSource,
    FolderSource,
    GlobalConfig,
    LlmsTxtSource,
    NetworkBounds,
    PipelineConfig,
    RepoSource,
)
from indexfoundry.models.ids import RunId
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect import copy_folder_files, copy_local_pdf
from indexfoundry.phases.connect.folder import scan_folder
from indexfoundry.phases.connect.llms_txt import read_llms_txt
from indexfoundry.phases.connect.net import FetchPolicy
from indexfoundry.phases.connect.pdf import pdf_info
from indexfoundry.phases.connect.remote import FetchReport, RemoteConnector, load_raw_manifest
from indexfoundry.phases.connect.repo import read_repo, repo_name
from indexfoundry.phases.connect.url import UrlJob, UrlResult
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.atomic import atomic_write_jsonl
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.layout import RunLayout


def _absolute_url(value: str) -> str:
    try:
        parsed = httpx.URL(value)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise ValueError("must be an absolute URL") from None
    if not parsed.scheme or not (parsed.host or parsed.scheme == "file"):
        raise ValueError("must be an absolute URL")
    return value


# ---------------------------------------------------------------- inputs
class ConnectUrlInput(Strict):
    """Input of ``indexfoundry_connect_url``."""

    run_id: RunId = Field(description="Run directory to write to")
    url: str = Field(description="URL to fetch")
    allowed_domains: list[str] | None = Field(
        default=None, description="Domain allowlist (empty = allow all); narrows the run's own allowlist"
    )
    timeout_ms: int | None = Field(
        default=None, ge=1000, le=60000, description="Request timeout (default: the run's connect.timeout_ms, 30000)"
    )
    headers: dict[str, str] | None = Field(default=None, description="Custom HTTP headers")
    force: bool = Field(default=False, description="Re-fetch even if content exists (a conditional request)")

    @field_validator("url")
    @classmethod
    def _url_is_absolute(cls, value: str) -> str:
        return _absolute_url(value)


class ConnectSitemapInput(Strict):
    """Input of ``indexfoundry_connect_sitemap``."""

    run_id: RunId = Field(description="Run directory to write to")
    sitemap_url: str = Field(description="Sitemap XML URL (or a site root: sitemaps from its robots.txt)")
    max_pages: int = Field(default=100, ge=1, le=10000, description="Maximum pages to fetch")
    include_patterns: list[str] | None = Field(default=None, description="Regex patterns for URLs to include")
    exclude_patterns: list[str] | None = Field(default=None, description="Regex patterns for URLs to exclude")
    concurrency: int = Field(default=3, ge=1, le=10, description="Parallel fetch count")
    force: bool = Field(default=False, description="Re-fetch pages already in the run (conditional requests)")

    @field_validator("sitemap_url")
    @classmethod
    def _url_is_absolute(cls, value: str) -> str:
        return _absolute_url(value)


class ConnectFolderInput(Strict):
    """Input of ``indexfoundry_connect_folder``."""

    run_id: RunId = Field(description="Run directory to write to")
    path: str = Field(description="Absolute path to folder")
    glob: str = Field(default="**/*", description="Glob pattern (e.g., '**/*.pdf')")
    exclude_patterns: list[str] | None = Field(default=None, description="Patterns to exclude")
    max_file_size_mb: float = Field(default=50, ge=0.1, le=500, description="Skip files larger than this")
    force: bool = Field(default=False, description="Copy again even if the run already has the file")


class ConnectPdfInput(Strict):
    """Input of ``indexfoundry_connect_pdf``."""

    run_id: RunId = Field(description="Run directory to write to")
    source: str = Field(description="URL or local path to PDF")
    force: bool = Field(default=False, description="Fetch or copy again even if the run already has it")


class ConnectCrawlInput(Strict):
    """Input of ``indexfoundry_connect_crawl`` (a ``crawl`` source's main fields)."""

    run_id: RunId = Field(description="Run to write to")
    url: str = Field(description="Start URL")
    scope: Literal["host", "prefix"] = Field(default="host", description="Stay on the host, or under prefix")
    prefix: str | None = Field(default=None, description="URL prefix for scope 'prefix'")
    max_depth: int = Field(default=3, ge=0, le=50, description="Link hops followed")
    max_pages: int = Field(default=100, ge=1, le=10000, description="Most pages stored")
    include_patterns: list[str] = Field(default_factory=list, description="Regexes a followed URL must match")
    exclude_patterns: list[str] = Field(default_factory=list, description="Regexes never followed")

    @field_validator("url")
    @classmethod
    def _url_is_absolute(cls, value: str) -> str:
        return _absolute_url(value)


class ConnectRepoInput(Strict):
    """Input of ``indexfoundry_connect_repo`` (a ``repo`` source's main fields)."""

    run_id: RunId = Field(description="Run to write to")
    path: str | None = Field(default=None, description="Local repository (or url)")
    url: str | None = Field(default=None, description="http(s) repository URL (or path)")
    ref: str = Field(default="HEAD", min_length=1, max_length=250, description="Branch, tag or commit")
    glob: str = Field(default="**/*", description="Files to include, e.g. 'docs/**/*.md'")
    exclude_patterns: list[str] = Field(default_factory=list, description="Globs left out")


class ConnectLlmsTxtInput(Strict):
    """Input of ``indexfoundry_connect_llms_txt``."""

    run_id: RunId = Field(description="Run to write to")
    url: str = Field(description="llms.txt / llms-full.txt URL, or the site root")
    max_pages: int = Field(default=200, ge=1, le=10000, description="Most linked pages fetched")
    prefer_markdown: bool = Field(default=True, description="Try '<page>.md' first")

    @field_validator("url")
    @classmethod
    def _url_is_absolute(cls, value: str) -> str:
        return _absolute_url(value)


# ---------------------------------------------------------------- outputs
class UrlArtifact(Strict):
    """A stored raw artifact."""

    path: str = Field(description="runs/<run_id>/raw/<sha256>.<ext>")
    sha256: str = Field(description="SHA-256 of the bytes")
    size_bytes: int = Field(description="Size of the bytes")
    content_type: str = Field(description="MIME type (header and sniffed bytes)")
    fetched_at: str = Field(description="ISO 8601 time of the fetch (or of the earlier fetch when skipped)")


class ConnectUrlOutput(Strict):
    """Output of ``indexfoundry_connect_url`` (failures are returned as a ToolError with a code)."""

    success: bool = Field(description="The URL's content is in the run")
    artifact: UrlArtifact = Field(description="The stored artifact")
    skipped: bool = Field(default=False, description="True if already fetched and not force")
    not_modified: bool = Field(default=False, description="True if the server answered 304 to a forced re-fetch")


class SitemapArtifact(Strict):
    url: str = Field(description="Page URL")
    path: str = Field(description="Stored artifact path")
    sha256: str = Field(description="SHA-256 of the bytes")


class UrlError(Strict):
    url: str = Field(description="URL (page, sitemap or robots.txt) that failed")
    error: str = Field(description="'CODE: message'")
    code: str = Field(description="Error code")


class ConnectSitemapOutput(Strict):
    """Output of ``indexfoundry_connect_sitemap``."""

    success: bool = Field(description="No page or sitemap failed")
    urls_discovered: int = Field(description="Page URLs listed by the sitemap(s)")
    urls_fetched: int = Field(description="Pages now in the run (downloaded, or revalidated with a 304)")
    urls_skipped: int = Field(
        description="Pages not fetched: already in the run, excluded by patterns or robots.txt, or past max_pages"
    )
    urls_failed: int = Field(description="Pages that failed")
    urls_not_modified: int = Field(default=0, description="Pages revalidated with a 304 (no body downloaded)")
    urls_removed: list[str] = Field(default_factory=list, description="Pages now 404/410, dropped from the run")
    artifacts: list[SitemapArtifact] = Field(description="Pages stored, sorted by URL")
    errors: list[UrlError] = Field(description="Failures, sorted by URL")


class FolderArtifact(Strict):
    uri: str = Field(description="'<folder name>/<relative path>'")
    path: str = Field(description="Stored artifact path")
    sha256: str = Field(description="SHA-256 of the bytes")


class FileError(Strict):
    uri: str = Field(description="File that failed")
    error: str = Field(description="'CODE: message'")
    code: str = Field(description="Error code")


class ConnectFolderOutput(Strict):
    """Output of ``indexfoundry_connect_folder``."""

    success: bool = Field(description="No file failed")
    files_found: int = Field(description="Files matching the glob and not excluded")
    files_copied: int = Field(description="Files copied into raw/")
    files_skipped: int = Field(description="Files already in the run with the same content (not force)")
    files_failed: int = Field(description="Files that could not be copied (too large, unreadable)")
    artifacts: list[FolderArtifact] = Field(description="Files stored, sorted by uri")
    errors: list[FileError] = Field(description="Failures, sorted by uri")


class PdfMetadata(Strict):
    title: str | None = Field(default=None, description="Document title")
    author: str | None = Field(default=None, description="Author")
    created: str | None = Field(default=None, description="Creation date (ISO 8601)")
    modified: str | None = Field(default=None, description="Modification date (ISO 8601)")


class PdfArtifact(Strict):
    path: str = Field(description="runs/<run_id>/raw/<sha256>.pdf")
    sha256: str = Field(description="SHA-256 of the bytes")
    size_bytes: int = Field(description="Size of the bytes")
    page_count: int = Field(description="Number of pages")
    pdf_version: str = Field(description="PDF version, e.g. '1.4'")
    has_ocr_layer: bool = Field(description="Some page has a text layer (born-digital, or OCRed); false: needs OCR")
    metadata: PdfMetadata = Field(description="Document information")


class ConnectPdfOutput(Strict):
    """Output of ``indexfoundry_connect_pdf``."""

    success: bool = Field(description="The PDF is in the run")
    artifact: PdfArtifact = Field(description="The stored PDF and its facts")
    skipped: bool = Field(default=False, description="True if already in the run and not force")


class ConnectPagesOutput(Strict):
    """Output of ``indexfoundry_connect_crawl`` and ``indexfoundry_connect_llms_txt``."""

    success: bool = Field(description="No page failed")
    pages_stored: int = Field(description="Pages now in the run (downloaded, or revalidated with a 304)")
    not_modified: int = Field(default=0, description="Pages revalidated with a 304 (no body downloaded)")
    removed: list[str] = Field(default_factory=list, description="Pages now 404/410, dropped from the run")
    summary: dict[str, int] = Field(description="Counts: depth reached, duplicates, excluded, over the limit ...")
    artifacts: list[SitemapArtifact] = Field(description="Pages stored, sorted by URL")
    errors: list[UrlError] = Field(description="Failures, sorted by URL")


class ConnectRepoOutput(Strict):
    """Output of ``indexfoundry_connect_repo``."""

    success: bool = Field(description="No file failed")
    commit: str = Field(description="The commit the ref resolved to")
    files: int = Field(description="Files of the repository now in the run")
    removed: list[str] = Field(default_factory=list, description="Files of this repository no longer at the ref")
    artifacts: list[FolderArtifact] = Field(description="Files stored, sorted by uri")
    errors: list[FileError] = Field(description="Files left out, sorted by uri")


# ---------------------------------------------------------------- run access
@dataclass
class _RunSession:
    layout: RunLayout
    config: PipelineConfig
    global_config: GlobalConfig
    records: dict[str, RawRecord]
    fetched_at: dict[str, str]
    removed: list[str]
    network: NetworkBounds | None = None

    def policy(self) -> FetchPolicy:
        return FetchPolicy.from_config(self.config.connect, self.global_config).bounded(self.network)

    def present(self, uri: str) -> RawRecord | None:
        """The run's record for ``uri`` when its artifact is still there."""
        record = self.records.get(uri)
        if record is not None and (self.layout.root / record.path).is_file():
            return record
        return None

    def add(self, record: RawRecord, fetched_at: str) -> None:
        self.records[record.uri] = record
        self.fetched_at[record.uri] = fetched_at

    def artifact_path(self, record: RawRecord) -> str:
        return str(self.layout.root / record.path)

    def previous_fetch(self, uri: str) -> str:
        from indexfoundry.storage.manifest import load_manifest

        phase = load_manifest(self.layout).phases.get("connect")
        times = phase.details.get("fetched_at", {}) if phase is not None else {}
        value = times.get(uri) if isinstance(times, dict) else None
        return str(value) if value else ""


@contextmanager
def _session(run_id: str, runs_dir: str | Path | None, network: NetworkBounds | None = None) -> Iterator[_RunSession]:
    """Lock the run, hand out its records, then write the merged raw manifest and phase manifest."""
    from indexfoundry.app.runs import runs_dir_for
    from indexfoundry.models.config import load_global_config
    from indexfoundry.storage.manifest import load_run_config

    glob = load_global_config()
    layout = RunLayout.existing(runs_dir_for(runs_dir, glob), run_id)
    with RunSession.open(layout) as run:
        session = _RunSession(
            layout=layout,
            config=load_run_config(layout),
            global_config=glob,
            records={r.uri: r for r in load_raw_manifest(layout)},
            fetched_at={},
            removed=[],
            network=network,
        )
        yield session
        _commit(session, run)


def _commit(session: _RunSession, run: RunSession) -> None:
    from indexfoundry.storage.manifest import artifact_record

    layout = session.layout
    for uri in session.removed:
        session.records.pop(uri, None)
    records = [session.records[uri] for uri in sorted(session.records)]
    atomic_write_jsonl(layout.raw_manifest, records)
    manifest = run.reload()
    phase = manifest.phases.get("connect")
    if phase is None or phase.status != "completed":
        return
    paths = [*sorted({layout.root / r.path for r in records}), layout.raw_manifest]
    artifacts = [
        artifact_record(layout, p, len(records) if p == layout.raw_manifest else None) for p in paths if p.is_file()
    ]
    details = dict(phase.details)
    fetched = dict(details.get("fetched_at") or {})
    fetched.update(session.fetched_at)
    details["fetched_at"] = {uri: fetched[uri] for uri in sorted(fetched) if uri in session.records}
    if session.removed:
        details["removed"] = sorted({*details.get("removed", []), *session.removed})
    phase.artifacts = sorted(artifacts, key=lambda a: a.path)
    phase.outputs.count = len(records)
    phase.outputs.hashes = sorted(a.sha256 for a in artifacts)
    phase.details = details
    phase.stats = {**phase.stats, "files": len(records), "bytes": sum(r.size_bytes for r in records)}
    manifest.totals.sources_fetched = len(records)
    run.commit(totals=False)


def _gone(url: str, run_id: str) -> FetchFailed:
    return FetchFailed(
        f"{url} is gone (404/410); it was removed from run {run_id}",
        suggestion="Later phases prune its chunks when they rerun",
        details={"url": url, "removed": True},
    )


def _error_text(error: IndexFoundryError) -> str:
    return f"{error.code}: {error.message}"


# ---------------------------------------------------------------- tools
@tool("indexfoundry_connect_url", ConnectUrlInput, read_only=False, destructive=False, idempotent=True, open_world=True)
def connect_url(
    payload: ConnectUrlInput, *, runs_dir: str | Path | None = None, network: NetworkBounds | None = None, **_: Any
) -> ConnectUrlOutput:
    """Fetch a single URL into a run's raw/ with content-type detection, SSRF checks and the domain allowlist."""
    with _session(payload.run_id, runs_dir, network) as session:
        existing = session.present(payload.url)
        if existing is not None and not payload.force:
            return ConnectUrlOutput(
                success=True,
                skipped=True,
                artifact=UrlArtifact(
                    path=session.artifact_path(existing),
                    sha256=existing.sha256,
                    size_bytes=existing.size_bytes,
                    content_type=existing.content_type,
                    fetched_at=session.previous_fetch(existing.uri),
                ),
            )
        policy = _narrowed(session.policy(), payload.allowed_domains, payload.timeout_ms, payload.headers)
        previous = {payload.url: existing} if existing is not None else {}
        with RemoteConnector(session.layout, policy, previous=previous, respect_robots=False) as connector:
            result = connector.fetch_one(UrlJob(payload.url, "url", payload.url))
        if result.record is None:  # the URL was in the run and now answers 404/410
            session.removed.append(payload.url)
        else:
            session.add(result.record, result.fetched_at)
    if result.record is None:
        raise _gone(payload.url, payload.run_id)
    return ConnectUrlOutput(
        success=True,
        not_modified=result.status == "not_modified",
        artifact=UrlArtifact(
            path=session.artifact_path(result.record),
            sha256=result.record.sha256,
            size_bytes=result.record.size_bytes,
            content_type=result.record.content_type,
            fetched_at=result.fetched_at,
        ),
    )


def _narrowed(
    policy: FetchPolicy, allowed: list[str] | None, timeout_ms: int | None, headers: dict[str, str] | None
) -> FetchPolicy:
    changes: dict[str, Any] = {}
    if allowed:
        changes["allowed_domains"] = (*policy.allowed_domains, tuple(allowed))
    if timeout_ms is not None:
        changes["timeout_s"] = timeout_ms / 1000
    if headers:
        # Host and connection-level headers are the client's business, not the caller's.
        extra = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection", "content-length")}
        changes["headers"] = {**policy.headers, **extra}
    return dataclasses.replace(policy, **changes) if changes else policy


@tool(
    "indexfoundry_connect_sitemap",
    ConnectSitemapInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=True,
    long_running=True,
)
def connect_sitemap(
    payload: ConnectSitemapInput, *, runs_dir: str | Path | None = None, network: NetworkBounds | None = None, **_: Any
) -> ConnectSitemapOutput:
    """Crawl a sitemap (urlset, nested index, gzip, or a site root via robots.txt) deterministically into a run."""
    with _session(payload.run_id, runs_dir, network) as session:
        policy = dataclasses.replace(
            session.policy(),
            concurrency=min(payload.concurrency, session.global_config.security.max_concurrent_fetches),
        )
        previous = {uri: r for uri, r in session.records.items() if session.present(uri) is not None}
        with RemoteConnector(
            session.layout,
            policy,
            previous=previous,
            respect_robots=session.config.connect.respect_robots_txt,
        ) as connector:
            found = connector.discover(
                payload.sitemap_url,
                max_pages=payload.max_pages,
                include_patterns=payload.include_patterns or [],
                exclude_patterns=payload.exclude_patterns or [],
            )
            already = [u for u in found.urls if u in previous and not payload.force]
            todo = [UrlJob(u, "sitemap", payload.sitemap_url) for u in found.urls if u not in already]
            report = connector.fetch_all(todo)
        for result in report.results:
            if result.record is None:
                session.removed.append(result.uri)
            else:
                session.add(result.record, result.fetched_at)
        errors = [(u, e) for u, e in found.errors] + report.errors
        stored = [r.record for r in report.results if r.record is not None]
        return ConnectSitemapOutput(
            success=not errors,
            urls_discovered=found.discovered,
            urls_fetched=len(stored),
            urls_skipped=len(already) + found.skipped,
            urls_failed=len(report.errors),
            urls_not_modified=report.count("not_modified"),
            urls_removed=sorted(session.removed),
            artifacts=[
                SitemapArtifact(url=r.uri, path=session.artifact_path(r), sha256=r.sha256)
                for r in sorted(stored, key=lambda r: r.uri)
            ],
            errors=[UrlError(url=u, error=_error_text(e), code=e.code) for u, e in sorted(errors, key=lambda x: x[0])],
        )


@tool(
    "indexfoundry_connect_folder",
    ConnectFolderInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=False,
)
def connect_folder(
    payload: ConnectFolderInput, *, runs_dir: str | Path | None = None, network: NetworkBounds | None = None, **_: Any
) -> ConnectFolderOutput:
    """Copy a local folder's files (glob, exclude patterns, size limit, no symlink escapes) into a run's raw/."""
    source = FolderSource(
        type="folder",
        path=str(Path(payload.path).resolve()),
        glob=payload.glob,
        exclude_patterns=payload.exclude_patterns or [],
        max_file_size_mb=payload.max_file_size_mb,
        name=Path(payload.path).resolve().name or "folder",
    )
    with _session(payload.run_id, runs_dir, network) as session:
        scan = scan_folder(source)
        skipped = [
            f
            for f in scan.files
            if not payload.force and (r := session.present(f.uri)) is not None and r.sha256 == f.sha256
        ]
        skip_uris = {f.uri for f in skipped}
        scan.files = [f for f in scan.files if f.uri not in skip_uris]
        fetched_at: dict[str, str] = {}
        records, errors = copy_folder_files(session.layout, source, scan, fetched_at)
        for record in records:
            session.add(record, fetched_at[record.uri])
        return ConnectFolderOutput(
            success=not errors,
            files_found=len(scan.files) + len(skipped) + len(scan.errors),
            files_copied=len(records),
            files_skipped=len(skipped),
            files_failed=len(errors),
            artifacts=[
                FolderArtifact(uri=r.uri, path=session.artifact_path(r), sha256=r.sha256)
                for r in sorted(records, key=lambda r: r.uri)
            ],
            errors=[FileError(uri=u, error=_error_text(e), code=e.code) for u, e in sorted(errors, key=lambda x: x[0])],
        )


@tool("indexfoundry_connect_pdf", ConnectPdfInput, read_only=False, destructive=False, idempotent=True, open_world=True)
def connect_pdf(
    payload: ConnectPdfInput, *, runs_dir: str | Path | None = None, network: NetworkBounds | None = None, **_: Any
) -> ConnectPdfOutput:
    """Fetch (URL) or copy (local path) one PDF into a run and report its page count, version, text layer, metadata."""
    remote = "://" in payload.source
    uri = payload.source if remote else Path(payload.source).name
    record: RawRecord | None = None
    with _session(payload.run_id, runs_dir, network) as session:
        existing = session.present(uri)
        skipped = existing is not None and existing.content_type == "application/pdf" and not payload.force
        if skipped:
            record = existing
        elif remote:
            previous = {uri: existing} if existing is not None else {}
            with RemoteConnector(
                session.layout, session.policy(), previous=previous, respect_robots=False
            ) as connector:
                result = connector.fetch_one(UrlJob(uri, "pdf", uri, expect_pdf=True))
            record = result.record
            if record is None:  # the PDF was in the run and now answers 404/410
                session.removed.append(uri)
        else:
            record = copy_local_pdf(session.layout, Path(payload.source).resolve())
        if record is not None:
            password_env = session.config.extract.pdf_password_env
            password = os.environ.get(password_env) if password_env else None
            info = pdf_info(session.layout.root / record.path, password)
            if not skipped:
                session.add(record, utc_now())
    if record is None:
        raise _gone(uri, payload.run_id)
    return ConnectPdfOutput(
        success=True,
        skipped=skipped,
        artifact=PdfArtifact(
            path=session.artifact_path(record),
            sha256=record.sha256,
            size_bytes=record.size_bytes,
            page_count=info.page_count,
            pdf_version=info.pdf_version,
            has_ocr_layer=info.has_ocr_layer,
            metadata=PdfMetadata(**info.metadata),
        ),
    )


def _repo_source(payload: ConnectRepoInput) -> RepoSource:
    from pydantic import ValidationError

    from indexfoundry.models.validation import validation_error

    try:
        return RepoSource.model_validate({"type": "repo", **payload.model_dump(exclude={"run_id"})})
    except ValidationError as exc:
        raise validation_error(exc, "indexfoundry_connect_repo arguments") from None


def _merge_pages(session: _RunSession, results: list[UrlResult]) -> None:
    for result in results:
        if result.record is None:
            if result.status == "removed":
                session.removed.append(result.uri)
        else:
            session.add(result.record, result.fetched_at)


def _pages_output(session: _RunSession, report: FetchReport, summary: dict[str, int]) -> ConnectPagesOutput:
    stored = [r.record for r in report.results if r.record is not None]
    return ConnectPagesOutput(
        success=not report.errors,
        pages_stored=len(stored),
        not_modified=report.count("not_modified"),
        removed=sorted(session.removed),
        summary=summary,
        artifacts=[
            SitemapArtifact(url=r.uri, path=session.artifact_path(r), sha256=r.sha256)
            for r in sorted(stored, key=lambda r: r.uri)
        ],
        errors=[
            UrlError(url=u, error=_error_text(e), code=e.code) for u, e in sorted(report.errors, key=lambda x: x[0])
        ],
    )


def _previous(session: _RunSession) -> dict[str, RawRecord]:
    return {uri: r for uri, r in session.records.items() if session.present(uri) is not None}


@tool(
    "indexfoundry_connect_crawl",
    ConnectCrawlInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=True,
    long_running=True,
)
def connect_crawl(
    payload: ConnectCrawlInput, *, runs_dir: str | Path | None = None, network: NetworkBounds | None = None, **_: Any
) -> ConnectPagesOutput:
    """Crawl links from a start URL into a run (breadth-first, robots.txt, canonical URLs; known pages revalidated)."""
    source = CrawlSource.model_validate({"type": "crawl", **payload.model_dump(exclude={"run_id"})})
    with _session(payload.run_id, runs_dir, network) as session:
        with RemoteConnector(
            session.layout,
            session.policy(),
            previous=_previous(session),
            respect_robots=session.config.connect.respect_robots_txt,
        ) as connector:
            crawl = connector.crawl(source)
        _merge_pages(session, crawl.results)
        report = FetchReport(results=crawl.results, errors=crawl.errors)
        return _pages_output(session, report, crawl.summary())


@tool(
    "indexfoundry_connect_llms_txt",
    ConnectLlmsTxtInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=True,
    long_running=True,
)
def connect_llms_txt(
    payload: ConnectLlmsTxtInput, *, runs_dir: str | Path | None = None, network: NetworkBounds | None = None, **_: Any
) -> ConnectPagesOutput:
    """Read a site's llms.txt and the pages it links (as markdown when offered) into a run."""
    source = LlmsTxtSource.model_validate({"type": "llms_txt", **payload.model_dump(exclude={"run_id"})})
    with _session(payload.run_id, runs_dir, network) as session:
        with RemoteConnector(session.layout, session.policy(), previous=_previous(session)) as connector:
            llms = read_llms_txt(source, session.layout, connector.fetch_one, connector.policy.concurrency)
        _merge_pages(session, llms.results)
        report = FetchReport(results=llms.results, errors=llms.errors)
        return _pages_output(session, report, llms.summary())


@tool(
    "indexfoundry_connect_repo",
    ConnectRepoInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=True,
    long_running=True,
)
def connect_repo(
    payload: ConnectRepoInput, *, runs_dir: str | Path | None = None, network: NetworkBounds | None = None, **_: Any
) -> ConnectRepoOutput:
    """Read a git repository's files at a ref into a run (files gone at that ref are dropped)."""
    source = _repo_source(payload)
    with _session(payload.run_id, runs_dir, network) as session:
        read = read_repo(session.layout, source, session.policy())
        name = repo_name(source)
        now = utc_now()
        current = {r.uri for r in read.records}
        session.removed.extend(
            uri
            for uri, r in sorted(session.records.items())
            if r.source_kind == "repo" and r.source_name == name and uri not in current
        )
        for record in read.records:
            session.add(record, now)
        return ConnectRepoOutput(
            success=not read.errors,
            commit=read.commit,
            files=len(read.records),
            removed=sorted(session.removed),
            artifacts=[
                FolderArtifact(uri=r.uri, path=session.artifact_path(r), sha256=r.sha256)
                for r in sorted(read.records, key=lambda r: r.uri)
            ],
            errors=[
                FileError(uri=u, error=_error_text(e), code=e.code) for u, e in sorted(read.errors, key=lambda x: x[0])
            ],
        )
