"""``indexfoundry connect``: rerun the phase, and its single-purpose tool commands.

``indexfoundry connect url|sitemap|folder|pdf|crawl|llms-txt|repo … --run-id ID`` call the
``indexfoundry_connect_*`` tools on an existing run (the same functions the MCP server exposes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel

from indexfoundry.errors import ConfigInvalid
from indexfoundry.surfaces.cli.options import Force, Json, RunId, RunsDir
from indexfoundry.surfaces.cli.output import render
from indexfoundry.surfaces.cli.phase_group import phase_group

app = phase_group("connect", "Connect phase: fetch or copy sources into raw/.")


def _call(name: str, arguments: dict[str, Any], runs_dir: Path | None) -> BaseModel:
    from indexfoundry import api

    return api.call_tool(name, {k: v for k, v in arguments.items() if v is not None}, runs_dir=runs_dir)


def _headers(values: list[str]) -> dict[str, str] | None:
    headers: dict[str, str] = {}
    for value in values:
        key, sep, content = value.partition(":")
        if not sep or not key.strip():
            raise ConfigInvalid(
                f"--header '{value}' is not 'Name: value'", suggestion="e.g. --header 'Accept: text/html'"
            )
        headers[key.strip()] = content.strip()
    return headers or None


@app.command("url")
def url_cmd(
    url: str = typer.Argument(..., help="URL to fetch."),
    run_id: str = RunId,
    allowed_domain: list[str] = typer.Option([], "--allowed-domain", help="Only fetch from this domain (repeat)."),
    timeout_ms: int | None = typer.Option(None, "--timeout-ms", help="Request timeout (default: the run's)."),
    header: list[str] = typer.Option([], "--header", help="Custom header 'Name: value' (repeat)."),
    force: bool = Force,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Fetch one URL into the run's raw/ (indexfoundry_connect_url)."""
    out: Any = _call(
        "indexfoundry_connect_url",
        {
            "run_id": run_id,
            "url": url,
            "allowed_domains": allowed_domain or None,
            "timeout_ms": timeout_ms,
            "headers": _headers(header),
            "force": force,
        },
        runs_dir,
    )
    state = "already in the run" if out.skipped else "not modified" if out.not_modified else "fetched"
    render(
        out,
        json_out,
        [f"{state}: {url} -> {out.artifact.path} ({out.artifact.content_type}, {out.artifact.size_bytes} B)"],
    )


@app.command("sitemap")
def sitemap_cmd(
    sitemap_url: str = typer.Argument(..., help="Sitemap URL, or a site root to use its robots.txt Sitemap: lines."),
    run_id: str = RunId,
    max_pages: int = typer.Option(100, "--max-pages", help="Maximum pages to fetch."),
    include: list[str] = typer.Option([], "--include", help="Regex of URLs to include (repeat)."),
    exclude: list[str] = typer.Option([], "--exclude", help="Regex of URLs to exclude (repeat)."),
    concurrency: int = typer.Option(3, "--concurrency", help="Parallel fetches (1-10)."),
    force: bool = Force,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Crawl a sitemap into the run's raw/ (indexfoundry_connect_sitemap)."""
    out: Any = _call(
        "indexfoundry_connect_sitemap",
        {
            "run_id": run_id,
            "sitemap_url": sitemap_url,
            "max_pages": max_pages,
            "include_patterns": include or None,
            "exclude_patterns": exclude or None,
            "concurrency": concurrency,
            "force": force,
        },
        runs_dir,
    )
    lines = [
        f"discovered {out.urls_discovered}, fetched {out.urls_fetched} ({out.urls_not_modified} not modified), "
        f"skipped {out.urls_skipped}, failed {out.urls_failed}, removed {len(out.urls_removed)}",
        *(f"  {e.error} [{e.url}]" for e in out.errors),
    ]
    render(out, json_out, lines)
    if not out.success:
        raise typer.Exit(1)


@app.command("folder")
def folder_cmd(
    path: Path = typer.Argument(..., help="Folder to copy files from."),
    run_id: str = RunId,
    glob: str = typer.Option("**/*", "--glob", help="Glob of files to include."),
    exclude: list[str] = typer.Option([], "--exclude", help="Glob of files to leave out (repeat)."),
    max_file_size_mb: float = typer.Option(50, "--max-file-size-mb", help="Skip files larger than this."),
    force: bool = Force,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Copy a local folder's files into the run's raw/ (indexfoundry_connect_folder)."""
    out: Any = _call(
        "indexfoundry_connect_folder",
        {
            "run_id": run_id,
            "path": str(path.resolve()),
            "glob": glob,
            "exclude_patterns": exclude or None,
            "max_file_size_mb": max_file_size_mb,
            "force": force,
        },
        runs_dir,
    )
    lines = [
        f"found {out.files_found}, copied {out.files_copied}, skipped {out.files_skipped}, failed {out.files_failed}",
        *(f"  {e.error} [{e.uri}]" for e in out.errors),
    ]
    render(out, json_out, lines)
    if not out.success:
        raise typer.Exit(1)


@app.command("pdf")
def pdf_cmd(
    source: str = typer.Argument(..., help="URL or local path of the PDF."),
    run_id: str = RunId,
    force: bool = Force,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Fetch or copy one PDF into the run and show its facts (indexfoundry_connect_pdf)."""
    if "://" not in source:
        source = str(Path(source).resolve())
    out: Any = _call("indexfoundry_connect_pdf", {"run_id": run_id, "source": source, "force": force}, runs_dir)
    art = out.artifact
    meta = ", ".join(f"{k}={v}" for k, v in art.metadata.model_dump(exclude_none=True).items())
    render(
        out,
        json_out,
        [
            f"{'already in the run' if out.skipped else 'stored'}: {art.path}",
            f"  {art.page_count} pages, PDF {art.pdf_version}, text layer: {'yes' if art.has_ocr_layer else 'no'}"
            + (f", {meta}" if meta else ""),
        ],
    )


def _pages_lines(out: Any) -> list[str]:
    return [
        f"stored {out.pages_stored} page(s) ({out.not_modified} not modified), removed {len(out.removed)}, "
        f"failed {len(out.errors)}",
        *(f"  {e.error} [{e.url}]" for e in out.errors),
    ]


@app.command("crawl")
def crawl_cmd(
    url: str = typer.Argument(..., help="Start URL."),
    run_id: str = RunId,
    max_depth: int = typer.Option(3, "--max-depth", help="Link hops followed from the start URL."),
    max_pages: int = typer.Option(100, "--max-pages", help="Most pages stored."),
    prefix: str | None = typer.Option(None, "--prefix", help="Only follow links under this URL prefix."),
    include: list[str] = typer.Option([], "--include", help="Regex a followed URL must match (repeat)."),
    exclude: list[str] = typer.Option([], "--exclude", help="Regex of URLs never followed (repeat)."),
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Crawl links from a start URL into the run's raw/ (indexfoundry_connect_crawl)."""
    arguments = {
        "run_id": run_id,
        "url": url,
        "max_depth": max_depth,
        "max_pages": max_pages,
        "scope": "prefix" if prefix else None,
        "prefix": prefix,
        "include_patterns": include or None,
        "exclude_patterns": exclude or None,
    }
    out: Any = _call("indexfoundry_connect_crawl", arguments, runs_dir)
    render(out, json_out, _pages_lines(out))
    if not out.success:
        raise typer.Exit(1)


@app.command("llms-txt")
def llms_txt_cmd(
    url: str = typer.Argument(..., help="llms.txt / llms-full.txt URL, or the site root."),
    run_id: str = RunId,
    max_pages: int = typer.Option(200, "--max-pages", help="Most linked pages fetched."),
    no_markdown: bool = typer.Option(False, "--no-markdown", help="Do not try '<page>.md' first."),
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Read a site's llms.txt and the pages it links into the run's raw/ (indexfoundry_connect_llms_txt)."""
    arguments = {"run_id": run_id, "url": url, "max_pages": max_pages, "prefer_markdown": not no_markdown}
    out: Any = _call("indexfoundry_connect_llms_txt", arguments, runs_dir)
    render(out, json_out, _pages_lines(out))
    if not out.success:
        raise typer.Exit(1)


@app.command("repo")
def repo_cmd(
    location: str = typer.Argument(..., help="Local repository path, or an http(s) URL to clone."),
    run_id: str = RunId,
    ref: str = typer.Option("HEAD", "--ref", help="Branch, tag or commit."),
    glob: str = typer.Option("**/*", "--glob", help="Files to include, e.g. 'docs/**/*.md'."),
    exclude: list[str] = typer.Option([], "--exclude", help="Glob of files to leave out (repeat)."),
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Read a git repository's files at a ref into the run's raw/ (indexfoundry_connect_repo)."""
    remote = location.startswith(("http://", "https://"))
    arguments = {
        "run_id": run_id,
        "url": location if remote else None,
        "path": None if remote else str(Path(location).expanduser().resolve()),
        "ref": ref,
        "glob": glob,
        "exclude_patterns": exclude or None,
    }
    out: Any = _call("indexfoundry_connect_repo", arguments, runs_dir)
    lines = [
        f"commit {out.commit}: {out.files} file(s), removed {len(out.removed)}, left out {len(out.errors)}",
        *(f"  {e.error} [{e.uri}]" for e in out.errors),
    ]
    render(out, json_out, lines)
    if not out.success:
        raise typer.Exit(1)
