"""From extracted documents to ``DocumentChunk`` records: shared by the phase and the tools."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import (
    ChunkContent,
    ChunkMetadata,
    ChunkPosition,
    ChunkSource,
    DocumentChunk,
    ExtractedDocument,
    PageExtraction,
)
from indexfoundry.phases.base import LazyItems
from indexfoundry.phases.normalize.chunkers import Span, chunk_spans
from indexfoundry.phases.normalize.positions import TextPositions
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.hashing import chunk_id_for, sha256_json, sha256_text
from indexfoundry.storage.layout import RunLayout


def chunker_config(config: NormalizeConfig) -> dict[str, Any]:
    """The chunker settings that decide chunk boundaries, with their hash (the seed's
    ``chunker_config``: strategy, max_chars, overlap_chars, config_hash, and the rest)."""
    settings = {
        "strategy": config.chunk_strategy,
        "max_chars": config.max_chars,
        "min_chars": config.min_chars,
        "overlap_chars": config.overlap_chars,
        "split_hierarchy": config.split_hierarchy,
        "merge_short_sections": config.merge_short_sections,
    }
    return {**settings, "config_hash": sha256_json(settings)}


def _text_layout(span: Span) -> dict[str, str] | None:
    """How a chunk's text relates to its offsets when it is not a plain slice."""
    if not span.prefix and not span.suffix:
        return None
    return {
        "prefix": span.prefix,
        "suffix": span.suffix,
        "rule": "text = prefix + extracted[byte_start:byte_end] + suffix",
    }


def build_chunks(doc: ExtractedDocument, text: str, spans: list[Span]) -> list[DocumentChunk]:
    """Turn spans of one document into ``DocumentChunk`` records with stable ids."""
    positions = TextPositions(text)
    base_custom = {k: v for k, v in doc.metadata.items() if k != "title"}
    chunks: list[DocumentChunk] = []
    for index, span in enumerate(spans):
        chunk_text = span.text(text)
        byte_start = positions.byte_of(span.start)
        byte_end = positions.byte_of(span.end)
        custom = dict(base_custom)
        layout = _text_layout(span)
        if layout is not None:
            custom["text_layout"] = layout
        chunks.append(
            DocumentChunk(
                doc_id=doc.doc_id,
                chunk_id=chunk_id_for(doc.doc_id, byte_start, byte_end),
                chunk_index=index,
                source=ChunkSource(
                    type=doc.format,
                    uri=doc.uri,
                    content_hash=doc.content_hash,
                    record_id=doc.record_id,
                    commit=doc.commit,
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
                    custom=custom or None,
                ),
            )
        )
    return chunks


def load_pages(layout: RunLayout, doc: ExtractedDocument) -> list[PageExtraction] | None:
    """The per-page extraction of a paged document, if it has one."""
    if not doc.pages_path:
        return None
    return [PageExtraction.model_validate(p) for p in iter_jsonl(layout.root / doc.pages_path)]


@dataclass
class ChunkResult:
    """Chunks of many documents, with the counts the seed's stats need."""

    chunks: list[DocumentChunk] = field(default_factory=list)
    documents: int = 0
    hard_cuts: int = 0
    failed: list[tuple[ExtractedDocument, IndexFoundryError]] = field(default_factory=list)


def chunk_documents(
    layout: RunLayout,
    documents: list[ExtractedDocument],
    config: NormalizeConfig,
    on_error: Callable[[ExtractedDocument, IndexFoundryError], None] | None = None,
    advance: Callable[[], None] | None = None,
) -> ChunkResult:
    """Chunk ``documents`` (in order). A document that fails is reported to ``on_error``
    and skipped; without ``on_error`` the error is raised."""
    result = ChunkResult()
    for doc in documents:
        try:
            text = (layout.root / doc.text_path).read_text(encoding="utf-8")
            spans = chunk_spans(text, doc.headings, config, load_pages(layout, doc))
        except IndexFoundryError as error:
            if on_error is None:
                raise
            on_error(doc, error)
            result.failed.append((doc, error))
        else:
            result.documents += 1
            result.hard_cuts += sum(1 for s in spans if s.hard_cut)
            result.chunks.extend(build_chunks(doc, text, spans))
        if advance is not None:
            advance()
    return result


@dataclass(frozen=True)
class ChunkJob:
    """One document to chunk on an executor's worker, with everything it needs."""

    doc: ExtractedDocument
    text: str
    pages: list[PageExtraction] | None
    config: NormalizeConfig


@dataclass
class ChunkedDocument:
    """What chunking one document gave: its chunks, or the error that failed it."""

    chunks: list[DocumentChunk] = field(default_factory=list)
    hard_cuts: int = 0
    error: IndexFoundryError | None = None


def chunk_one(job: ChunkJob) -> ChunkedDocument:
    """Chunk one document (pure: runs on any worker)."""
    try:
        spans = chunk_spans(job.text, job.doc.headings, job.config, job.pages)
    except IndexFoundryError as error:
        return ChunkedDocument(error=error)
    return ChunkedDocument(build_chunks(job.doc, job.text, spans), sum(1 for s in spans if s.hard_cut))


def chunk_documents_remote(
    executor: Any,
    layout: RunLayout,
    documents: list[ExtractedDocument],
    config: NormalizeConfig,
    on_error: Callable[[ExtractedDocument, IndexFoundryError], None],
    advance: Callable[[], None],
) -> ChunkResult:
    """``chunk_documents`` on a remote executor: one task per document, the text sent with it;
    results (and errors) taken in document order, so the chunks are the same as here."""

    def job(index: int) -> ChunkJob:
        doc = documents[index]
        text = (layout.root / doc.text_path).read_text(encoding="utf-8")
        return ChunkJob(doc, text, load_pages(layout, doc), config)

    done = executor.map(chunk_one, LazyItems(len(documents), job), on_result=lambda index, result: advance())
    result = ChunkResult()
    for doc, one in zip(documents, done, strict=True):
        if one.error is not None:
            on_error(doc, one.error)
            result.failed.append((doc, one.error))
            continue
        result.documents += 1
        result.hard_cuts += one.hard_cuts
        result.chunks.extend(one.chunks)
    return result


def chunk_stats(documents: int, chunks: list[DocumentChunk], config: NormalizeConfig, hard_cuts: int) -> dict[str, Any]:
    """The seed's chunk stats over ``chunks``."""
    total = sum(c.content.char_count for c in chunks)
    return {
        "documents_processed": documents,
        "chunks_created": len(chunks),
        "chunks_below_min": sum(1 for c in chunks if c.content.char_count < config.min_chars),
        "chunks_at_max": hard_cuts,
        "avg_chunk_chars": round(total / len(chunks), 1) if chunks else 0,
        "total_chars": total,
    }
