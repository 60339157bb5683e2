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

Their inputs and outputs are ``connect_models``; the run lock and the raw manifest they merge into,
``connect_session``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from indexfoundry.app.tools.connect_models import (
    ConnectCrawlInput,
    ConnectFolderInput,
    ConnectFolderOutput,
    ConnectLlmsTxtInput,
    ConnectPagesOutput,
    ConnectPdfInput,
    ConnectPdfOutput,
    ConnectRepoInput,
    ConnectRepoOutput,
    ConnectSitemapInput,
    ConnectSitemapOutput,
    ConnectUrlInput,
    ConnectUrlOutput,
    FileError,
    FolderArtifact,
    PdfArtifact,
    PdfMetadata,
    SitemapArtifact,
    UrlArtifact,
    UrlError,
)
from indexfoundry.app.tools.connect_session import RawSession, raw_session
from indexfoundry.app.tools.registry import tool
from indexfoundry.errors import FetchFailed, IndexFoundryError
from indexfoundry.models.config import CrawlSource, FolderSource, LlmsTxtSource, NetworkBounds, RepoSource
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect import copy_folder_files, copy_local_pdf
from indexfoundry.phases.connect.folder import scan_folder
from indexfoundry.phases.connect.llms_txt import read_llms_txt
from indexfoundry.phases.connect.net import FetchPolicy
from indexfoundry.phases.connect.pdf import pdf_info
from indexfoundry.phases.connect.remote import FetchReport, RemoteConnector
from indexfoundry.phases.connect.repo import read_repo, repo_name
from indexfoundry.phases.connect.url import UrlJob, UrlResult
from indexfoundry.storage.clock import utc_now


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
    with raw_session(payload.run_id, runs_dir, network) as session:
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
    with raw_session(payload.run_id, runs_dir, network) as session:
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
    with raw_session(payload.run_id, runs_dir, network) as session:
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
    with raw_session(payload.run_id, runs_dir, network) as session:
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


def _merge_pages(session: RawSession, results: list[UrlResult]) -> None:
    for result in results:
        if result.record is None:
            if result.status == "removed":
                session.removed.append(result.uri)
        else:
            session.add(result.record, result.fetched_at)


def _pages_output(session: RawSession, report: FetchReport, summary: dict[str, int]) -> ConnectPagesOutput:
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


def _previous(session: RawSession) -> dict[str, RawRecord]:
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
    with raw_session(payload.run_id, runs_dir, network) as session:
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
    with raw_session(payload.run_id, runs_dir, network) as session:
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
    with raw_session(payload.run_id, runs_dir, network) as session:
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
