"""Per-document figures of a normalize output: ``normalized/document_figures.jsonl``.

One line per chunked document, in document order: what its chunks were made from (the hash of
the document's line in ``extracted/documents.jsonl`` and of its pages file), its chunks before
dedupe (id, text hash, and whether dedupe kept it) and its share of every count in
``chunk_stats.json`` and ``metadata_enrichment.json``. The phase's reports are the sums of these
lines, in a full run as in a run that carries unchanged documents over (``carry.py``): there a
document whose line and pages are those of the previous output keeps its figures and its lines
of ``chunks.jsonl`` as they were, and only the changed documents are chunked, enriched and counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import DocumentChunk
from indexfoundry.phases.normalize.build import ChunkedDocument
from indexfoundry.phases.normalize.enrich import Enriched, EnrichmentCounts
from indexfoundry.phases.normalize.window import TokenWindow
from indexfoundry.storage.hashing import sha256_bytes, sha256_file


@dataclass(frozen=True)
class DocumentInput:
    """One line of ``extracted/documents.jsonl``, as normalize's inputs are compared."""

    doc_id: str
    uri: str
    line: bytes
    record: str  # SHA-256 of the line
    pages: str | None  # SHA-256 of its pages file (paged formats)


def document_inputs(root: Path, documents: Path) -> list[DocumentInput]:
    """Every document line of ``documents`` (a run's ``extracted/documents.jsonl``) in order."""
    out = []
    for line in documents.read_bytes().splitlines():
        if not line.strip():
            continue
        row = orjson.loads(line)
        pages_path = row.get("pages_path")
        pages = sha256_file(root / pages_path) if pages_path else None
        out.append(DocumentInput(row["doc_id"], row["uri"], line, sha256_bytes(line), pages))
    return out


def figures_of(
    source: DocumentInput,
    chunked: ChunkedDocument,
    kept: list[bool],
    enriched: list[Enriched],
    tokens: list[int] | None,
    config: NormalizeConfig,
    window: TokenWindow | None,
) -> dict[str, Any]:
    """One document's line: ``kept`` is dedupe's verdict on each of its chunks, ``enriched`` and
    ``tokens`` (the embedded text's token count, with a window) are for the kept ones."""
    chunks = chunked.chunks
    languages: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    sections: Counter[str] = Counter()
    for found in enriched:
        if found.language:
            languages[found.language] += 1
        tags.update(found.tags)
        sections.update(found.sections)
    counts = tokens or []
    return {
        "doc_id": source.doc_id,
        "uri": source.uri,
        "record": source.record,
        "pages": source.pages,
        "chunks": [[c.chunk_id, c.content.text_hash, int(k)] for c, k in zip(chunks, kept, strict=True)],
        "chars": sum(c.content.char_count for c in chunks),
        "below_min": sum(1 for c in chunks if c.content.char_count < config.min_chars),
        "hard_cuts": chunked.hard_cuts,
        "split_for_window": chunked.split_for_window,
        "content_free": chunked.content_free,
        "enriched": sum(1 for found in enriched if found.changed),
        "languages": dict(sorted(languages.items())),
        "tags": dict(sorted(tags.items())),
        "sections": dict(sorted(sections.items())),
        "dates": sum(len(found.dates) for found in enriched),
        "over_window": sum(1 for n in counts if window is not None and n > window.max_tokens),
        "max_tokens": max(counts, default=0),
    }


def kept_count(figures: dict[str, Any]) -> int:
    """How many of a document's chunks are lines of ``chunks.jsonl``."""
    return sum(flag for _, _, flag in figures["chunks"])


def totals(figures: Iterable[dict[str, Any]], window: TokenWindow | None) -> tuple[dict[str, Any], EnrichmentCounts]:
    """``chunk_stats.json``'s stats and the enrichment counts: the sums of the documents' figures."""
    documents = chunks = kept = 0
    sums: Counter[str] = Counter()
    enrichment = EnrichmentCounts()
    max_tokens = 0
    for one in figures:
        documents += 1
        chunks += len(one["chunks"])
        kept += kept_count(one)
        for key in ("chars", "below_min", "hard_cuts", "split_for_window", "content_free", "over_window"):
            sums[key] += one[key]
        enrichment.enriched += one["enriched"]
        enrichment.languages.update(one["languages"])
        enrichment.tags.update(one["tags"])
        enrichment.sections.update(one["sections"])
        enrichment.dates += one["dates"]
        max_tokens = max(max_tokens, one["max_tokens"])
    enrichment.chunks = kept
    total = sums["chars"]
    stats: dict[str, Any] = {
        "documents_processed": documents,
        "chunks_created": chunks,
        "chunks_below_min": sums["below_min"],
        "chunks_at_max": sums["hard_cuts"],
        "avg_chunk_chars": round(total / chunks, 1) if chunks else 0,
        "total_chars": total,
        "content_free_dropped": sums["content_free"],
        "chunks_after_dedupe": kept,
    }
    if window is not None:
        stats.update(
            {
                "token_window": window.describe(),
                "chunks_over_window": sums["over_window"],
                "chunks_split_for_window": sums["split_for_window"],
                "max_embedded_tokens": max_tokens,
            }
        )
    return stats, enrichment


def chunk_lines(chunks: Iterable[DocumentChunk]) -> list[bytes]:
    """``chunks.jsonl`` lines of chunks (canonical JSON, newline-terminated)."""
    from indexfoundry.storage.atomic import jsonl_line

    return [(jsonl_line(c) + "\n").encode("utf-8") for c in chunks]


__all__ = ["DocumentInput", "chunk_lines", "document_inputs", "figures_of", "kept_count", "totals"]
