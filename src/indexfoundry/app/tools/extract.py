"""The extract tools: ``indexfoundry_extract_pdf``, ``_extract_html`` and ``_extract_document``.

Each extracts one raw file of an existing run with the tool's options (on top of the run's
frozen extract config), in a worker process under the run's time and memory limits, and
writes the same artifacts the extract phase writes: ``extracted/<sha256>.txt`` (and
``.pages.jsonl`` for PDFs, one text file per record for split files). The file's entries in
``extracted/documents.jsonl`` are replaced and the manifest's ``extract`` entry lists the new
artifacts, so ``indexfoundry_normalize_chunk`` and the index phase pick them up. A repeated
call with the same file and options is skipped (``skipped: true``) unless ``force``.
A file that cannot be extracted is a ToolError with its code (PARSE_ERROR, OCR_FAILED,
EMPTY_CONTENT).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from indexfoundry import __version__
from indexfoundry.app.tools.registry import tool
from indexfoundry.errors import ConfigInvalid, NotFound
from indexfoundry.models.artifacts import ExtractionReport
from indexfoundry.models.base import Strict, config_field
from indexfoundry.models.config import ExtractConfig, PipelineConfig
from indexfoundry.models.ids import RunId
from indexfoundry.models.records import ExtractedDocument, RawRecord
from indexfoundry.phases.extract import ExtractedText, ExtractOptions, ExtractPhase, FormatHint
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.artifacts import read_artifact, read_artifact_data, write_artifact
from indexfoundry.storage.atomic import atomic_write_jsonl, iter_jsonl, sync_filesystem
from indexfoundry.storage.hashing import sha256_file, sha256_json
from indexfoundry.storage.layout import RunLayout


# ------------------------------------------------------------------ inputs (the catalogue's schemas)
class PageRange(Strict):
    """Pages to extract, 1-indexed and inclusive."""

    start: int = Field(ge=1, description="First page (1-indexed)")
    end: int = Field(ge=1, description="Last page (inclusive)")


class ExtractPdfInput(Strict):
    """Input of ``indexfoundry_extract_pdf``."""

    run_id: RunId = Field(description="Run to work in")
    pdf_path: str = Field(description="Path relative to the run's raw/ dir (e.g. '<sha256>.pdf')")
    # Constraints and defaults come from ExtractConfig (one truth); descriptions are the tool's own.
    mode: Literal["layout", "plain", "ocr"] = config_field(
        ExtractConfig,
        "pdf_mode",
        description="Extraction mode: layout preserves columns, plain is linear, ocr for scanned docs",
    )
    page_range: PageRange | None = Field(default=None, description="Pages to extract (1-indexed, inclusive)")
    ocr_language: str = config_field(
        ExtractConfig, "ocr_language", description="Tesseract language code for OCR mode (e.g. 'eng+fra')"
    )
    force: bool = Field(default=False, description="Extract again even if this extraction exists")


class ExtractHtmlInput(Strict):
    """Input of ``indexfoundry_extract_html``."""

    run_id: RunId = Field(description="Run to work in")
    html_path: str = Field(description="Path relative to the run's raw/ dir (e.g. '<sha256>.html')")
    preserve_headings: bool = config_field(
        ExtractConfig, "preserve_headings", description="Keep heading structure as markdown"
    )
    preserve_links: bool = config_field(
        ExtractConfig, "preserve_links", description="Keep [text](url) format for links"
    )
    preserve_tables: bool = config_field(
        ExtractConfig, "preserve_tables", description="Convert tables to markdown format"
    )
    remove_selectors: list[str] | None = Field(
        default=None, description="CSS selectors to remove (nav, footer, etc.), on top of the built-in ones"
    )
    force: bool = Field(default=False, description="Extract again even if this extraction exists")


class ExtractDocumentInput(Strict):
    """Input of ``indexfoundry_extract_document``."""

    run_id: RunId = Field(description="Run to work in")
    doc_path: str = Field(description="Path relative to the run's raw/ dir")
    format_hint: Literal["auto", "markdown", "docx", "txt", "csv", "json"] = Field(
        default="auto", description="Override format detection"
    )
    csv_preview_rows: int = config_field(
        ExtractConfig, "csv_preview_rows", description="For CSV: rows to include in text preview"
    )
    force: bool = Field(default=False, description="Extract again even if this extraction exists")


# ------------------------------------------------------------------ outputs
class PdfArtifacts(Strict):
    pages_jsonl: str = Field(description="Path to the page-by-page extraction")
    full_text: str | None = Field(default=None, description="Path to the concatenated text")


class PdfStats(Strict):
    pages_processed: int = Field(description="Pages extracted")
    pages_empty: int = Field(description="Pages without text")
    pages_ocr_fallback: int = Field(description="Pages without a text layer that were OCR'd")
    chars_extracted: int = Field(description="Characters in the full text")


class PdfReport(Strict):
    extractor_version: str = Field(description="e.g. 'pdfminer.six@20260107' (+ tesseract when OCR ran)")
    mode_used: str = Field(description="layout, plain or ocr")
    warnings: list[str] = Field(description="Damaged streams, OCR fallbacks not possible...")


class ExtractPdfOutput(Strict):
    """Output of ``indexfoundry_extract_pdf``."""

    success: bool = Field(description="Text was extracted")
    artifacts: PdfArtifacts
    stats: PdfStats
    extraction_report: PdfReport
    skipped: bool = Field(default=False, description="True if already extracted with these options and !force")


class TextArtifacts(Strict):
    text: list[str] = Field(description="Extracted text files (one per record for split files), relative to the run")


class TextStats(Strict):
    documents: int = Field(description="Documents produced (records, for split csv/jsonl files)")
    chars_extracted: int = Field(description="Characters extracted")
    headings: int = Field(description="Markdown headings found")


class TextReport(Strict):
    extractor_version: str = Field(description="Library that did the extraction, with its version")
    format: str = Field(description="Format the file was extracted as")
    warnings: list[str] = Field(description="Problems met that did not stop the extraction")


class ExtractHtmlOutput(Strict):
    """Output of ``indexfoundry_extract_html``."""

    success: bool = Field(description="Text was extracted")
    artifacts: TextArtifacts
    stats: TextStats
    title: str | None = Field(default=None, description="The page's <title>")
    description: str | None = Field(default=None, description="The page's meta description")
    extraction_report: TextReport
    skipped: bool = Field(default=False, description="True if already extracted with these options and !force")


class ExtractDocumentOutput(Strict):
    """Output of ``indexfoundry_extract_document``."""

    success: bool = Field(description="Text was extracted")
    artifacts: TextArtifacts
    stats: TextStats
    title: str | None = Field(default=None, description="Document title, when one was found")
    extraction_report: TextReport
    skipped: bool = Field(default=False, description="True if already extracted with these options and !force")


# ------------------------------------------------------------------ helpers
_EXTRACTORS = {
    "pdf": "pdfminer.six",
    "html": "beautifulsoup4",
    "docx": "python-docx",
    "markdown": "mistune",
    "csv": "indexfoundry",
    "json": "indexfoundry",
    "txt": "charset-normalizer",
}


def _layout(run_id: str, runs_dir: str | Path | None) -> RunLayout:
    from indexfoundry.app.runs import runs_dir_for

    return RunLayout.existing(runs_dir_for(runs_dir), run_id)


def _raw_record(layout: RunLayout, relative: str) -> tuple[RawRecord, Path]:
    """The raw file named by a path relative to raw/ (or to the run), and its manifest record."""
    from indexfoundry.phases.connect.sniff import sniff_content_type
    from indexfoundry.storage.hashing import sha256_bytes

    rel = relative[4:] if relative.startswith("raw/") else relative
    path = layout.resolve_inside(f"raw/{rel}")
    if layout.raw_dir.resolve() not in path.parents or not path.is_file():
        raise NotFound(
            f"'{relative}' is not a file in run {layout.run_id}'s raw/ folder",
            suggestion="Pass a path like '<sha256>.pdf' listed in raw/raw_manifest.jsonl",
        )
    key = path.relative_to(layout.root.resolve()).as_posix()
    if layout.raw_manifest.is_file():
        for row in iter_jsonl(layout.raw_manifest):
            record = RawRecord.model_validate(row)
            if record.path == key:
                return record, path
    data = path.read_bytes()
    ext = path.suffix.lstrip(".")
    return (
        RawRecord(
            uri=key,
            sha256=sha256_bytes(data),
            size_bytes=len(data),
            content_type=sniff_content_type(path.name, data[:4096]),
            ext=ext or "bin",
            path=key,
            source_kind="folder",
            source_name="raw",
            relative_path=path.name,
        ),
        path,
    )


def _run_config(layout: RunLayout, **extract: Any) -> PipelineConfig:
    from indexfoundry.storage.manifest import load_run_config

    config = load_run_config(layout)
    return config.model_copy(update={"extract": config.extract.model_copy(update=extract)})


def _extract(
    layout: RunLayout, raw: RawRecord, path: Path, config: PipelineConfig, options: ExtractOptions
) -> list[ExtractedText]:
    """Extract one file in a worker (same limits as the phase); failures raise their error."""
    from indexfoundry.phases.extract.workers import ExtractJob, run_jobs

    cfg = config.extract
    job = ExtractJob(0, str(path), raw, config, options)
    result = run_jobs([job], 0 if cfg.workers == 0 else 1, cfg.timeout_s, cfg.memory_mb)[0]
    if result.error is not None:
        raise result.error
    if result.unsupported is not None:
        raise ConfigInvalid(
            f"{raw.uri}: {result.unsupported}",
            suggestion="Use the tool for the file's format, or pass format_hint",
        )
    return result.items


def _tool_key(tool_name: str, raw: RawRecord, config: PipelineConfig, options: ExtractOptions) -> str:
    return sha256_json(
        {
            "tool": tool_name,
            "raw": raw.sha256,
            "uri": raw.uri,
            "extract": config.extract.model_dump(mode="json", exclude={"workers"}),
            "page_range": list(options.page_range) if options.page_range else None,
            "format_hint": options.format_hint,
            "versions": ExtractPhase().tool_versions(),
        }
    )


def _previous_run(layout: RunLayout, raw: RawRecord, key: str) -> dict[str, Any] | None:
    """The stored result of an identical earlier call whose files are unchanged, if any."""
    if not layout.extraction_report.is_file():
        return None
    report = read_artifact(layout.extraction_report, ExtractionReport)
    entry = (report.tool_runs or {}).get(raw.uri)
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    for rel, digest in (entry.get("files") or {}).items():
        file = layout.root / rel
        if not file.is_file() or sha256_file(file) != digest:
            return None
    return entry


def _store(layout: RunLayout, raw: RawRecord, items: list[ExtractedText]) -> tuple[list[ExtractedDocument], set[Path]]:
    """Write the documents' files and replace the raw file's entries in documents.jsonl."""
    layout.extracted_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str | None] = {}
    phase = ExtractPhase()
    new_docs = [phase._write(layout, raw, item, files) for item in items if item.text.strip()]
    written = {layout.root / rel for rel in files}
    old = (
        [ExtractedDocument.model_validate(r) for r in iter_jsonl(layout.documents)]
        if layout.documents.is_file()
        else []
    )
    documents = [d for d in old if d.uri != raw.uri] + new_docs
    documents.sort(key=lambda d: (d.uri, d.record_id or "", d.doc_id))
    sync_filesystem()
    atomic_write_jsonl(layout.documents, documents)
    return new_docs, written


def _finish(
    session: RunSession, tool_name: str, key: str, raw: RawRecord, written: set[Path], result: dict[str, Any]
) -> None:
    """Keep the call's result in extraction_report.json (for skipping) and record the manifest."""
    layout = session.layout
    report: dict[str, Any] = {}
    if layout.extraction_report.is_file():
        report = read_artifact_data(layout.extraction_report, ExtractionReport)
    files = {p.relative_to(layout.root).as_posix(): sha256_file(p) for p in sorted(written)}
    runs = dict(report.get("tool_runs") or {})
    runs[raw.uri] = {"tool": tool_name, "key": key, "files": files, "result": result}
    report["tool_runs"] = dict(sorted(runs.items()))
    report.setdefault("extractor_versions", ExtractPhase().tool_versions())
    write_artifact(layout.extraction_report, ExtractionReport.model_validate(report))
    doc_count = sum(1 for _ in iter_jsonl(layout.documents))
    session.record_tool(
        ExtractPhase(),
        "connect",
        tool_name,
        key,
        [*sorted(written), layout.documents, layout.extraction_report],
        doc_count,
        layout.documents,
    )


def _text_result(docs: list[ExtractedDocument], items: list[ExtractedText], fmt: str) -> dict[str, Any]:
    from indexfoundry.phases.base import package_version

    library = _EXTRACTORS.get(fmt, "indexfoundry")
    version = __version__ if library == "indexfoundry" else package_version(library)
    return {
        "artifacts": {"text": [d.text_path for d in docs]},
        "stats": {
            "documents": len(docs),
            "chars_extracted": sum(d.char_count for d in docs),
            "headings": sum(len(d.headings) for d in docs),
        },
        "title": docs[0].title if len(docs) == 1 else None,
        "description": docs[0].metadata.get("description") if len(docs) == 1 else None,
        "extraction_report": {
            "extractor_version": f"{library}@{version}",
            "format": fmt,
            "warnings": sorted({w for item in items for w in item.warnings}),
        },
    }


def _text_tool(
    tool_name: str,
    run_id: str,
    runs_dir: str | Path | None,
    relative: str,
    force: bool,
    extract: dict[str, Any],
    format_hint: FormatHint,
) -> tuple[dict[str, Any], bool]:
    layout = _layout(run_id, runs_dir)
    with RunSession.open(layout) as session:
        raw, path = _raw_record(layout, relative)
        config = _run_config(layout, **extract)
        options = ExtractOptions(format_hint=format_hint)
        key = _tool_key(tool_name, raw, config, options)
        previous = None if force else _previous_run(layout, raw, key)
        if previous is not None:
            return previous["result"], True
        items = _extract(layout, raw, path, config, options)
        if not any(item.text.strip() for item in items):
            from indexfoundry.errors import EmptyContent

            raise EmptyContent(f"no text could be extracted from {raw.uri}", suggestion="Check the file")
        docs, written = _store(layout, raw, items)
        result = _text_result(docs, items, items[0].format)
        _finish(session, tool_name, key, raw, written, result)
    return result, False


# ------------------------------------------------------------------ tools
@tool(
    "indexfoundry_extract_pdf", ExtractPdfInput, read_only=False, destructive=False, idempotent=True, open_world=False
)
def extract_pdf(payload: ExtractPdfInput, runs_dir: str | Path | None = None, **_: Any) -> ExtractPdfOutput:
    """Converts PDF pages to text using a pinned extractor (pdfminer.six): layout keeps the column
    reading order, plain is linear, ocr renders every page and reads it with tesseract; pages without
    a text layer are OCR'd automatically. Writes extracted/<sha256>.pages.jsonl and <sha256>.txt."""
    from indexfoundry.phases.base import package_version
    from indexfoundry.phases.extract.ocr import tesseract_version

    layout = _layout(payload.run_id, runs_dir)
    with RunSession.open(layout) as session:
        raw, path = _raw_record(layout, payload.pdf_path)
        config = _run_config(layout, pdf_mode=payload.mode, ocr_language=payload.ocr_language)
        env = config.extract.pdf_password_env
        page_range = None
        if payload.page_range is not None:
            if payload.page_range.start > payload.page_range.end:
                raise ConfigInvalid("page_range.start is after page_range.end", suggestion="Give start <= end")
            page_range = (payload.page_range.start, payload.page_range.end)
        options = ExtractOptions(
            page_range=page_range, format_hint="pdf", pdf_password=os.environ.get(env) if env else None
        )
        key = _tool_key("indexfoundry_extract_pdf", raw, config, options)
        previous = None if payload.force else _previous_run(layout, raw, key)
        if previous is not None:
            return ExtractPdfOutput.model_validate({**previous["result"], "skipped": True})
        items = _extract(layout, raw, path, config, options)
        item = items[0]
        pages = item.pages or []
        version = f"pdfminer.six@{package_version('pdfminer.six')}"
        if any(p.ocr_used for p in pages):
            version += f"; tesseract@{tesseract_version()}"
        stats = {
            "pages_processed": len(pages),
            "pages_empty": sum(p.is_empty for p in pages),
            "pages_ocr_fallback": sum(p.ocr_used for p in pages) if payload.mode != "ocr" else 0,
            "chars_extracted": len(item.text),
        }
        key_path = layout.extracted_text(raw.sha256).relative_to(layout.root).as_posix()
        result = {
            "success": True,
            "artifacts": {
                "pages_jsonl": layout.extracted_pages(raw.sha256).relative_to(layout.root).as_posix(),
                "full_text": key_path,
            },
            "stats": stats,
            "extraction_report": {"extractor_version": version, "mode_used": payload.mode, "warnings": item.warnings},
        }
        _docs, written = _store(layout, raw, items)
        _finish(session, "indexfoundry_extract_pdf", key, raw, written, result)
    return ExtractPdfOutput.model_validate(result)


@tool(
    "indexfoundry_extract_html", ExtractHtmlInput, read_only=False, destructive=False, idempotent=True, open_world=False
)
def extract_html(payload: ExtractHtmlInput, runs_dir: str | Path | None = None, **_: Any) -> ExtractHtmlOutput:
    """Strips HTML to clean markdown: main content only (drops nav, header, footer, aside, scripts,
    forms and remove_selectors), headings and tables kept as markdown, links optional; the character
    set comes from the BOM, the <meta> charset or sniffing. Captures the title and meta description."""
    extract: dict[str, Any] = {
        "preserve_headings": payload.preserve_headings,
        "preserve_links": payload.preserve_links,
        "preserve_tables": payload.preserve_tables,
    }
    if payload.remove_selectors is not None:
        extract["remove_selectors"] = payload.remove_selectors
    result, skipped = _text_tool(
        "indexfoundry_extract_html", payload.run_id, runs_dir, payload.html_path, payload.force, extract, "html"
    )
    return ExtractHtmlOutput.model_validate({"success": True, **result, "skipped": skipped})


@tool(
    "indexfoundry_extract_document",
    ExtractDocumentInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=False,
)
def extract_document(
    payload: ExtractDocumentInput, runs_dir: str | Path | None = None, **_: Any
) -> ExtractDocumentOutput:
    """Generic document extractor for markdown (front matter, headings), docx (Heading styles, lists,
    tables), txt, csv (delimiter and encoding detection, preview rows) and json/ndjson (key.path: value
    text); a csv/jsonl source with a records spec becomes one document per record."""
    result, skipped = _text_tool(
        "indexfoundry_extract_document",
        payload.run_id,
        runs_dir,
        payload.doc_path,
        payload.force,
        {"csv_preview_rows": payload.csv_preview_rows},
        payload.format_hint,
    )
    result = {k: v for k, v in result.items() if k != "description"}
    return ExtractDocumentOutput.model_validate({"success": True, **result, "skipped": skipped})
