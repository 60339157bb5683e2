"""Phase 3, normalize: chunk every extracted document, enrich and dedupe the chunks.

Reads ``extracted/documents.jsonl``; writes ``normalized/chunks.jsonl`` (``DocumentChunk``
records in document order), ``chunk_stats.json``, ``dedupe_report.json`` and
``metadata_enrichment.json``.
"""

from __future__ import annotations

from typing import Any

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import DedupeOptions, NormalizeConfig, PipelineConfig
from indexfoundry.models.records import (
    ChunkContent,
    ChunkMetadata,
    ChunkPosition,
    ChunkSource,
    DocumentChunk,
    ExtractedDocument,
    PageExtraction,
)
from indexfoundry.phases.base import Phase, PhaseContext, PhaseOutcome, upstream_artifact_hashes
from indexfoundry.phases.normalize.chunkers import Span, chunk_spans
from indexfoundry.phases.normalize.dedupe import dedupe_chunks
from indexfoundry.phases.normalize.positions import TextPositions
from indexfoundry.storage.atomic import atomic_write_json, atomic_write_jsonl, iter_jsonl
from indexfoundry.storage.hashing import chunk_id_for, sha256_json, sha256_text


def chunker_config(config: NormalizeConfig) -> dict[str, Any]:
    """The chunker settings that decide chunk boundaries, with their hash."""
    settings = {
        "strategy": config.chunk_strategy,
        "max_chars": config.max_chars,
        "min_chars": config.min_chars,
        "overlap_chars": config.overlap_chars,
        "split_hierarchy": config.split_hierarchy,
        "merge_short_sections": config.merge_short_sections,
    }
    return {**settings, "config_hash": sha256_json(settings)}


def build_chunks(doc: ExtractedDocument, text: str, spans: list[Span]) -> list[DocumentChunk]:
    """Turn spans of one document into ``DocumentChunk`` records with stable ids."""
    positions = TextPositions(text)
    chunks: list[DocumentChunk] = []
    for index, span in enumerate(spans):
        chunk_text = text[span.start : span.end]
        byte_start = positions.byte_of(span.start)
        byte_end = positions.byte_of(span.end)
        chunks.append(
            DocumentChunk(
                doc_id=doc.doc_id,
                chunk_id=chunk_id_for(doc.doc_id, byte_start, byte_end),
                chunk_index=index,
                source=ChunkSource(
                    type=doc.format, uri=doc.uri, content_hash=doc.content_hash, record_id=doc.record_id
                ),
                content=ChunkContent(
                    text=chunk_text,
                    text_hash=sha256_text(chunk_text),
                    char_count=len(chunk_text),
                    token_count_approx=(len(chunk_text) + 3) // 4,
                ),
                position=ChunkPosition(
                    byte_start=byte_start,
                    byte_end=byte_end,
                    page=span.page,
                    section=span.section,
                    line_start=positions.line_of(span.start),
                    line_end=positions.line_of(max(span.start, span.end - 1)),
                ),
                metadata=ChunkMetadata(
                    content_type=doc.content_type,
                    title=doc.title,
                    heading_path=span.heading_path,
                    heading_level=span.heading_level,
                    part=span.part,
                    custom=_custom_metadata(doc),
                ),
            )
        )
    return chunks


def _custom_metadata(doc: ExtractedDocument) -> dict[str, Any] | None:
    custom = {k: v for k, v in doc.metadata.items() if k != "title"}
    return custom or None


def dedupe_options(config: NormalizeConfig) -> DedupeOptions | None:
    """The dedupe settings, or None when dedupe is off."""
    if config.dedupe is False:
        return None
    if config.dedupe is True:
        return DedupeOptions()
    return config.dedupe


class NormalizePhase(Phase):
    name = "normalize"
    version = "1"

    def config_slice(self, config: PipelineConfig) -> Any:
        return config.normalize.model_dump(mode="json")

    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        return upstream_artifact_hashes(ctx, "extract")

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        layout = ctx.layout
        config = ctx.config.normalize
        documents = [ExtractedDocument.model_validate(row) for row in iter_jsonl(layout.documents)]
        chunks: list[DocumentChunk] = []
        hard_cuts = 0
        with ctx.progress.task("normalize", total=len(documents)) as task:
            for doc in documents:
                try:
                    text = (layout.root / doc.text_path).read_text(encoding="utf-8")
                    pages = None
                    if doc.pages_path:
                        pages = [PageExtraction.model_validate(p) for p in iter_jsonl(layout.root / doc.pages_path)]
                    spans = chunk_spans(text, doc.headings, config, pages)
                except IndexFoundryError as error:
                    ctx.record_error(error, "normalize", uri=doc.uri)
                    task.advance()
                    continue
                hard_cuts += sum(1 for s in spans if s.hard_cut)
                chunks.extend(build_chunks(doc, text, spans))
                task.advance()
        created = len(chunks)
        options = dedupe_options(config)
        if options is not None:
            chunks, report = dedupe_chunks(chunks, options)
        else:
            report = {
                "method": None,
                "stats": {
                    "input_chunks": created,
                    "output_chunks": created,
                    "duplicates_removed": 0,
                    "duplicate_groups": 0,
                },
                "removed": [],
            }
        from indexfoundry.phases.normalize.enrich import enrich_chunks

        chunks, enrichment = enrich_chunks(chunks, config)
        total_chars = sum(c.content.char_count for c in chunks)
        stats = {
            "documents_processed": len(documents),
            "chunks_created": created,
            "chunks_after_dedupe": len(chunks),
            "chunks_below_min": sum(1 for c in chunks if c.content.char_count < config.min_chars),
            "chunks_at_max": hard_cuts,
            "avg_chunk_chars": round(total_chars / len(chunks), 1) if chunks else 0,
            "total_chars": total_chars,
        }
        atomic_write_jsonl(layout.chunks, chunks)
        atomic_write_json(layout.chunk_stats, {"stats": stats, "chunker_config": chunker_config(config)})
        atomic_write_json(layout.dedupe_report, report)
        atomic_write_json(layout.enrichment_report, enrichment)
        return PhaseOutcome(
            artifacts=[layout.chunks, layout.chunk_stats, layout.dedupe_report, layout.enrichment_report],
            output_count=len(chunks),
            stats=stats,
            new=len(chunks),
            record_counts={"normalized/chunks.jsonl": len(chunks)},
        )
