"""The connect section of a pipeline config: the content sources and how they are fetched.

``ENV_NAME`` and ``SECRET_HEADER`` are the checks on header settings: a header whose name looks
like a credential is refused in ``headers`` (it would be stored in the run's ``config.json``)
and belongs in ``headers_env``, which holds only environment variable names.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from indexfoundry.models.base import Strict

# Header names whose values are credentials: only ever taken from the environment (headers_env).
SECRET_HEADER = re.compile(r"authorization|cookie|token|secret|passw|api[-_]?key|auth", re.IGNORECASE)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RecordsSpec(Strict):
    """Split a csv/jsonl/ndjson file into one document per record."""

    id_field: str = Field(description="Field holding each record's id")
    text_fields: list[str] = Field(min_length=1, description="Fields joined to form the document text")
    metadata_fields: list[str] = Field(default_factory=list, description="Fields kept as metadata")


class RenderOptions(Strict):
    """How pages of a url/sitemap/crawl source are fetched: plain HTTP, or rendered in Chromium."""

    render: Literal["http", "browser"] = Field(
        default="http", description="'browser': render pages in headless Chromium (the 'browser' extra)"
    )
    wait_until: Literal["networkidle", "load", "domcontentloaded"] = Field(
        default="networkidle", description="render: browser: page event to wait for before reading the DOM"
    )
    wait_for_selector: str | None = Field(
        default=None, max_length=500, description="render: browser: also wait for this CSS selector"
    )


class UrlSource(RenderOptions):
    type: Literal["url"] = Field(description="A single URL")
    url: str = Field(description="URL to fetch")
    name: str | None = Field(default=None, description="Source name (defaults to the URL)")


class SitemapSource(RenderOptions):
    type: Literal["sitemap"] = Field(description="A sitemap to crawl")
    url: str = Field(description="Sitemap XML URL")
    max_pages: int | None = Field(default=None, ge=1, le=10000, description="Maximum pages to fetch")
    include_patterns: list[str] = Field(default_factory=list, description="Regexes of URLs to include")
    exclude_patterns: list[str] = Field(default_factory=list, description="Regexes of URLs to exclude")
    name: str | None = Field(default=None, description="Source name (defaults to the URL)")


class FolderSource(Strict):
    type: Literal["folder"] = Field(description="A local folder")
    path: str = Field(description="Folder path; relative paths are relative to the config file")
    glob: str = Field(default="**/*", description="Glob of files to include, e.g. '**/*.md'")
    exclude_patterns: list[str] = Field(
        default_factory=list, description="Globs (relative to the folder) of files to leave out"
    )
    max_file_size_mb: float = Field(default=50, gt=0, le=500, description="Skip files larger than this")
    include_hidden: bool = Field(default=False, description="Include dot-files and dot-folders (never .git)")
    name: str | None = Field(
        default=None, description="Source name used in document uris (defaults to the folder's name)"
    )
    records: RecordsSpec | None = Field(default=None, description="Split csv/jsonl files into records")

    def uri_root(self) -> str:
        """The name every document uri of this source starts with (``<name>/<path in the folder>``)."""
        return self.name or PurePath(self.path).name


class PdfSource(Strict):
    type: Literal["pdf"] = Field(description="One PDF, by URL or local path")
    source: str = Field(description="URL or local path of the PDF")
    name: str | None = Field(default=None, description="Source name")


class CrawlSource(RenderOptions):
    """Follow links from a start URL, breadth-first, within a scope."""

    type: Literal["crawl"] = Field(description="Crawl links from a start URL")
    url: str = Field(description="Start URL")
    scope: Literal["host", "prefix"] = Field(
        default="host", description="Follow links on the start URL's host, or only under 'prefix'"
    )
    prefix: str | None = Field(
        default=None, description="scope: prefix: URL prefix (default: the start URL up to its last '/')"
    )
    max_depth: int = Field(default=3, ge=0, le=50, description="Link hops followed from the start URL")
    max_pages: int = Field(default=100, ge=1, le=10000, description="Maximum pages fetched")
    include_patterns: list[str] = Field(default_factory=list, description="Regexes a followed URL must match")
    exclude_patterns: list[str] = Field(default_factory=list, description="Regexes of URLs never followed")
    requests_per_second: float = Field(default=5.0, gt=0, le=1000, description="Most requests per second to one host")
    name: str | None = Field(default=None, description="Source name (defaults to the start URL)")


class RepoSource(Strict):
    """Files of a git repository at a ref, read from git's object store (no checkout)."""

    type: Literal["repo"] = Field(description="A git repository")
    path: str | None = Field(default=None, description="Local repository; relative to the config file")
    url: str | None = Field(default=None, description="http(s) URL of a remote repository (cloned, guarded)")
    ref: str = Field(default="HEAD", min_length=1, max_length=250, description="Branch, tag or commit")
    glob: str = Field(default="**/*", description="Glob of files to include, e.g. 'docs/**/*.md'")
    exclude_patterns: list[str] = Field(default_factory=list, description="Globs of files to leave out")
    max_file_size_mb: float = Field(default=50, gt=0, le=500, description="Skip files larger than this")
    max_repo_size_mb: float = Field(
        default=2048, gt=0, le=1_048_576, description="A url repository's clone may not grow past this"
    )
    name: str | None = Field(default=None, description="Source name used in uris (default: the repo's name)")

    def uri_root(self) -> str:
        """The name every document uri of this source starts with (``<name>/<path in the repo>``)."""
        if self.name:
            return self.name
        location = (self.path or self.url or "repo").rstrip("/")
        return location.rsplit("/", 1)[-1].removesuffix(".git") or "repo"

    @model_validator(mode="after")
    def _one_location(self) -> RepoSource:
        if (self.path is None) == (self.url is None):
            raise ValueError("a repo source needs exactly one of 'path' or 'url'")
        if self.ref.startswith("-"):
            raise ValueError("ref must not start with '-'")
        return self


class LlmsTxtSource(Strict):
    """A site's /llms.txt: index the pages it links (their markdown when offered)."""

    type: Literal["llms_txt"] = Field(description="A site's llms.txt")
    url: str = Field(description="URL of llms.txt or llms-full.txt, or the site root (then /llms.txt)")
    max_pages: int = Field(default=200, ge=1, le=10000, description="Maximum linked pages fetched")
    same_host: bool = Field(default=True, description="Only follow links on the llms.txt host")
    prefer_markdown: bool = Field(default=True, description="Try '<page>.md' first (the llms.txt convention)")
    name: str | None = Field(default=None, description="Source name (defaults to the URL)")


Source = Annotated[
    UrlSource | SitemapSource | FolderSource | PdfSource | CrawlSource | RepoSource | LlmsTxtSource,
    Field(discriminator="type"),
]


class ConnectConfig(Strict):
    sources: list[Source] = Field(min_length=1, description="Content sources")
    allowed_domains: list[str] = Field(default_factory=list, description="Domain allowlist (empty = all)")
    blocked_domains: list[str] = Field(default_factory=list, description="Domains never fetched")
    allow_private_networks: bool = Field(
        default=False, description="Allow fetching loopback/private/link-local addresses (off: SSRF guard)"
    )
    timeout_ms: int = Field(default=30000, ge=1000, le=60000, description="Request timeout")
    max_file_size_mb: float = Field(default=50, gt=0, le=500, description="Largest file fetched")
    user_agent: str = Field(default="IndexFoundry/1.0", description="HTTP User-Agent")
    headers: dict[str, str] = Field(
        default_factory=dict, description="Custom HTTP headers (no secrets: those go in headers_env)"
    )
    headers_env: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "HTTP headers whose values come from environment variables, {header: ENV_VAR} (e.g. "
            "Authorization: DOCS_AUTH); only the variable's name is stored, never its value"
        ),
    )
    headers_env_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts ('name' or 'name:port') headers_env is sent to; empty: every host the run fetches",
    )
    concurrency: int = Field(default=3, ge=1, le=10, description="Parallel fetches")
    respect_robots_txt: bool = Field(default=True, description="Obey robots.txt when crawling")
    allowed_private_hosts: list[str] = Field(
        default_factory=list,
        description=(
            "Hosts ('name' or 'name:port') that may be fetched although they resolve to loopback/private "
            "addresses (an intranet docs server); every other private address stays blocked, redirects included"
        ),
    )
    max_retries: int = Field(
        default=3, ge=0, le=10, description="Retries after a timeout, connection error, 429 or 5xx"
    )
    retry_backoff_ms: int = Field(
        default=500, ge=0, le=60000, description="First retry delay; doubles each retry (Retry-After wins)"
    )
    max_redirects: int = Field(default=10, ge=0, le=30, description="Redirect hops followed (each one checked)")

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, value: dict[str, str]) -> dict[str, str]:
        # A header value written here is copied into the run's config.json: secrets never are.
        for name in value:
            if SECRET_HEADER.search(name):
                raise ValueError(
                    f"header '{name}' looks like a secret and would be stored in the run's config.json: "
                    f"put it in connect.headers_env as '{name}: ENV_VAR' instead"
                )
        return value

    @field_validator("headers_env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, env in value.items():
            if not ENV_NAME.fullmatch(env):
                raise ValueError(f"headers_env.{name}: '{env}' is not an environment variable name")
        return value
