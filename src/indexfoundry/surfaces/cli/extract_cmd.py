"""``indexfoundry extract``: rerun the phase, and its single-purpose tool commands.

``indexfoundry extract pdf|html|document PATH --run-id ID`` call the
``indexfoundry_extract_*`` tools on one raw file of an existing run (PATH is relative to the
run's raw/ folder, as listed in raw/raw_manifest.jsonl).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.surfaces.cli.options import Force, Json, RunId, RunsDir
from indexfoundry.surfaces.cli.output import render
from indexfoundry.surfaces.cli.phase_group import phase_group

app = phase_group("extract", "Extract phase: raw files to text.")


def _call(name: str, arguments: dict[str, Any], runs_dir: Path | None) -> BaseModel:
    return api.call_tool(name, {k: v for k, v in arguments.items() if v is not None}, runs_dir=runs_dir)


def _pages(value: str | None) -> dict[str, int] | None:
    if value is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", value)
    if not match:
        raise ConfigInvalid(f"--pages '{value}' is not 'N' or 'START-END'", suggestion="e.g. --pages 2-5")
    start = int(match.group(1))
    return {"start": start, "end": int(match.group(2) or start)}


@app.command("pdf")
def pdf_cmd(
    pdf_path: str = typer.Argument(..., help="PDF path relative to the run's raw/ folder."),
    run_id: str = RunId,
    mode: str = typer.Option("layout", "--mode", help="layout (columns kept), plain (linear) or ocr."),
    pages: str | None = typer.Option(None, "--pages", help="Pages to extract: 'N' or 'START-END' (1-indexed)."),
    ocr_language: str = typer.Option("eng", "--ocr-language", help="Tesseract language code(s), e.g. 'eng+fra'."),
    force: bool = Force,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Extract a PDF to per-page text (indexfoundry_extract_pdf)."""
    out: Any = _call(
        "indexfoundry_extract_pdf",
        {
            "run_id": run_id,
            "pdf_path": pdf_path,
            "mode": mode,
            "page_range": _pages(pages),
            "ocr_language": ocr_language,
            "force": force,
        },
        runs_dir,
    )
    stats = out.stats
    state = "already extracted" if out.skipped else "extracted"
    lines = [
        f"{state}: {pdf_path} ({out.extraction_report.mode_used}) -> {out.artifacts.full_text}",
        f"pages {stats.pages_processed} (empty {stats.pages_empty}, OCR fallback {stats.pages_ocr_fallback}), "
        f"{stats.chars_extracted} chars",
        *(f"warning: {w}" for w in out.extraction_report.warnings),
    ]
    render(out, json_out, lines)


@app.command("html")
def html_cmd(
    html_path: str = typer.Argument(..., help="HTML path relative to the run's raw/ folder."),
    run_id: str = RunId,
    headings: bool = typer.Option(True, "--headings/--no-headings", help="Keep headings as markdown."),
    links: bool = typer.Option(False, "--links/--no-links", help="Keep links as [text](url)."),
    tables: bool = typer.Option(True, "--tables/--no-tables", help="Convert tables to markdown."),
    remove: list[str] = typer.Option([], "--remove", help="CSS selector to remove (repeat)."),
    force: bool = Force,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Extract an HTML page's main content as markdown (indexfoundry_extract_html)."""
    out: Any = _call(
        "indexfoundry_extract_html",
        {
            "run_id": run_id,
            "html_path": html_path,
            "preserve_headings": headings,
            "preserve_links": links,
            "preserve_tables": tables,
            "remove_selectors": remove or None,
            "force": force,
        },
        runs_dir,
    )
    render(out, json_out, _text_lines(html_path, out))


@app.command("document")
def document_cmd(
    doc_path: str = typer.Argument(..., help="File path relative to the run's raw/ folder."),
    run_id: str = RunId,
    format_hint: str = typer.Option(
        "auto", "--format", help="auto, markdown, docx, txt, csv or json (overrides detection)."
    ),
    csv_preview_rows: int = typer.Option(100, "--csv-preview-rows", help="CSV rows put in the text (1-1000)."),
    force: bool = Force,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Extract markdown, docx, txt, csv or json (indexfoundry_extract_document)."""
    out: Any = _call(
        "indexfoundry_extract_document",
        {
            "run_id": run_id,
            "doc_path": doc_path,
            "format_hint": format_hint,
            "csv_preview_rows": csv_preview_rows,
            "force": force,
        },
        runs_dir,
    )
    render(out, json_out, _text_lines(doc_path, out))


def _text_lines(path: str, out: Any) -> list[str]:
    state = "already extracted" if out.skipped else "extracted"
    files = out.artifacts.text
    target = files[0] if len(files) == 1 else f"{len(files)} files"
    lines = [
        f"{state}: {path} ({out.extraction_report.format}) -> {target}",
        f"{out.stats.documents} document(s), {out.stats.chars_extracted} chars, {out.stats.headings} headings",
    ]
    if out.title:
        lines.append(f"title: {out.title}")
    lines.extend(f"warning: {w}" for w in out.extraction_report.warnings)
    return lines
