"""Choose the extractor for a raw file from its content type (or the caller's format hint)."""

from __future__ import annotations

from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, ExtractOptions, Unsupported
from indexfoundry.phases.extract.markdown import extract_markdown
from indexfoundry.phases.extract.text import declared_charset, decode_text

TEXT_TYPES = {"text/plain"}
MARKDOWN_TYPES = {"text/markdown", "text/x-markdown"}
HTML_TYPES = {"text/html", "application/xhtml+xml"}
PDF_TYPES = {"application/pdf"}
DOCX_TYPES = {"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
CSV_TYPES = {"text/csv", "text/tab-separated-values"}
JSON_TYPES = {"application/json"}
NDJSON_TYPES = {"application/x-ndjson", "application/jsonl", "application/ndjson"}

# format_hint -> the content type whose extractor it selects.
HINTS: dict[str, str] = {
    "markdown": "text/markdown",
    "txt": "text/plain",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": next(iter(DOCX_TYPES)),
    "csv": "text/csv",
    "json": "application/json",
}


def _effective_type(raw: RawRecord, options: ExtractOptions) -> str:
    ctype = raw.content_type.split(";")[0].strip().lower()
    if options.format_hint == "json" and (ctype in NDJSON_TYPES or raw.ext in ("jsonl", "ndjson")):
        return "application/x-ndjson"
    if options.format_hint == "csv" and (ctype in CSV_TYPES):
        return ctype
    if options.format_hint != "auto":
        return HINTS[options.format_hint]
    return ctype


def extract_by_type(
    data: bytes, raw: RawRecord, config: PipelineConfig, options: ExtractOptions | None = None
) -> list[ExtractedText]:
    """Run the extractor that fits ``raw.content_type`` (or ``options.format_hint``)."""
    options = options or ExtractOptions()
    ctype = _effective_type(raw, options)
    declared = declared_charset(raw.content_type, raw.extract_options)
    if ctype in MARKDOWN_TYPES:
        text, encoding = decode_text(data, declared, uri=raw.uri)
        body, front, headings, title = extract_markdown(text)
        return [ExtractedText(text=body, format="markdown", title=title, headings=headings, metadata=front)]
    if ctype in TEXT_TYPES:
        text, encoding = decode_text(data, declared, uri=raw.uri)
        return [ExtractedText(text=text, format="txt", headings=[], metadata={"encoding": encoding})]
    if ctype in PDF_TYPES:
        from indexfoundry.phases.extract.pdf import extract_pdf

        return extract_pdf(data, raw, config, options)
    if ctype in HTML_TYPES:
        from indexfoundry.phases.extract.html import extract_html

        return [extract_html(data, raw, config)]
    if ctype in DOCX_TYPES:
        from indexfoundry.phases.extract.docx import extract_docx

        return [extract_docx(data, raw, config)]
    if ctype in CSV_TYPES or ctype in JSON_TYPES or ctype in NDJSON_TYPES:
        from indexfoundry.phases.extract.tabular import Kind, extract_tabular

        kind: Kind = "csv" if ctype in CSV_TYPES else "json" if ctype in JSON_TYPES else "ndjson"
        return extract_tabular(
            data, raw, config, kind, delimiter="\t" if ctype.endswith("tab-separated-values") else None
        )
    raise Unsupported(f"no extractor for content type {ctype}")
