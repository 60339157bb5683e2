"""Phase 2, extract: turn each raw file into text (markdown where structure exists).

Reads ``raw/raw_manifest.jsonl``; writes ``extracted/<key>.txt``, ``<key>.pages.jsonl`` for
paged formats, ``documents.jsonl`` (one ``ExtractedDocument`` per document, sorted) and
``extraction_report.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexfoundry.errors import EmptyContent, IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import DocFormat, ExtractedDocument, Heading, PageExtraction, RawRecord
from indexfoundry.phases.base import (
    Phase,
    PhaseContext,
    PhaseOutcome,
    package_version,
    upstream_artifact_hashes,
)
from indexfoundry.storage.atomic import atomic_write_json, atomic_write_jsonl, atomic_write_text, iter_jsonl
from indexfoundry.storage.hashing import doc_id_for, sha256_text
from indexfoundry.storage.layout import RunLayout


@dataclass
class ExtractedText:
    """What an extractor returns for one document."""

    text: str
    format: DocFormat
    title: str | None = None
    headings: list[Heading] | None = None  # None: find markdown headings in ``text``
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: list[PageExtraction] | None = None
    record_id: str | None = None
    warnings: list[str] = field(default_factory=list)


class Unsupported(Exception):
    """The file's type has no extractor; it is skipped with a warning, not an error."""


def extract_bytes(data: bytes, raw: RawRecord, config: PipelineConfig) -> list[ExtractedText]:
    """Extract one raw file (pure function: safe to run in a worker process)."""
    from indexfoundry.phases.extract.dispatch import extract_by_type

    return extract_by_type(data, raw, config)


def _text_key(raw: RawRecord, item: ExtractedText) -> str:
    if item.record_id is None:
        return raw.sha256
    return f"{raw.sha256}.{sha256_text(item.record_id)[:16]}"


class ExtractPhase(Phase):
    name = "extract"
    version = "1"

    def config_slice(self, config: PipelineConfig) -> Any:
        return config.extract.model_dump(mode="json")

    def tool_versions(self) -> dict[str, str]:
        return {
            **super().tool_versions(),
            "mistune": package_version("mistune"),
            "pdfminer.six": package_version("pdfminer.six"),
            "beautifulsoup4": package_version("beautifulsoup4"),
            "python-docx": package_version("python-docx"),
        }

    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        return upstream_artifact_hashes(ctx, "connect")

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        layout = ctx.layout
        raws = [RawRecord.model_validate(row) for row in iter_jsonl(layout.raw_manifest)]
        documents: list[ExtractedDocument] = []
        written: set[Path] = set()
        warnings: list[str] = []
        skipped: list[dict[str, str]] = []
        failed = 0
        with ctx.progress.task("extract", total=len(raws)) as task:
            for raw in raws:
                try:
                    data = (layout.root / raw.path).read_bytes()
                    items = extract_bytes(data, raw, ctx.config)
                except Unsupported as exc:
                    skipped.append({"uri": raw.uri, "reason": str(exc)})
                    task.advance()
                    continue
                except IndexFoundryError as error:
                    failed += 1
                    ctx.record_error(error, "extract", uri=raw.uri)
                    task.advance()
                    continue
                for item in items:
                    warnings.extend(f"{raw.uri}: {w}" for w in item.warnings)
                    if not item.text.strip():
                        failed += 1
                        ctx.record_error(
                            EmptyContent(
                                f"no text could be extracted from {raw.uri}",
                                suggestion="Check the file; for scanned PDFs use pdf_mode: ocr",
                            ),
                            "extract",
                            uri=raw.uri,
                        )
                        continue
                    documents.append(self._write(layout, raw, item, written))
                task.advance()
        documents.sort(key=lambda d: (d.uri, d.record_id or "", d.doc_id))
        atomic_write_jsonl(layout.documents, documents)
        report = {
            "extractor_versions": self.tool_versions(),
            "pdf_mode": ctx.config.extract.pdf_mode,
            "documents_extracted": len(documents),
            "files_failed": failed,
            "files_skipped": sorted(skipped, key=lambda s: s["uri"]),
            "chars_extracted": sum(d.char_count for d in documents),
            "warnings": sorted(warnings),
        }
        atomic_write_json(layout.extraction_report, report)
        _prune(layout, written | {layout.documents, layout.extraction_report})
        return PhaseOutcome(
            artifacts=[*sorted(written), layout.documents, layout.extraction_report],
            output_count=len(documents),
            stats={
                "documents": len(documents),
                "files_failed": failed,
                "files_skipped": len(skipped),
                "chars_extracted": report["chars_extracted"],
            },
            new=len(documents),
            record_counts={"extracted/documents.jsonl": len(documents)},
        )

    def _write(self, layout: RunLayout, raw: RawRecord, item: ExtractedText, written: set[Path]) -> ExtractedDocument:
        from indexfoundry.phases.extract.markdown import find_headings

        key = _text_key(raw, item)
        text_path = layout.extracted_text(key)
        if text_path not in written:
            atomic_write_text(text_path, item.text)
            written.add(text_path)
        pages_rel = None
        if item.pages is not None:
            pages_path = layout.extracted_pages(key)
            if pages_path not in written:
                atomic_write_jsonl(pages_path, item.pages)
                written.add(pages_path)
            pages_rel = pages_path.relative_to(layout.root).as_posix()
        headings = item.headings if item.headings is not None else find_headings(item.text)
        return ExtractedDocument(
            doc_id=doc_id_for(raw.uri, raw.sha256, item.record_id),
            uri=raw.uri,
            format=item.format,
            content_hash=raw.sha256,
            content_type=raw.content_type,
            text_path=text_path.relative_to(layout.root).as_posix(),
            text_sha256=sha256_text(item.text),
            char_count=len(item.text),
            title=item.title,
            headings=headings,
            pages_path=pages_rel,
            page_count=len(item.pages) if item.pages is not None else None,
            record_id=item.record_id,
            metadata=item.metadata,
        )


def _prune(layout: RunLayout, keep: set[Path]) -> None:
    for path in layout.extracted_dir.iterdir():
        if path.is_file() and path not in keep:
            path.unlink()
