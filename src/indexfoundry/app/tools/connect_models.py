"""Inputs and outputs of the connect phase's single-purpose tools (``indexfoundry_connect_url``,
``_sitemap``, ``_folder``, ``_pdf``, ``_crawl``, ``_repo``, ``_llms_txt``): what a caller writes and
what a tool answers. The tools themselves are ``app/tools/connect.py``.
"""

from __future__ import annotations

from typing import Literal

import httpx
from pydantic import Field, field_validator

from indexfoundry.models.base import Strict
from indexfoundry.models.ids import RunId


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
