"""Chunk deduplication. The kept chunk of a group is always the first in document order."""

from __future__ import annotations

from typing import Any

from indexfoundry.models.config import DedupeOptions
from indexfoundry.models.records import DocumentChunk


def dedupe_chunks(chunks: list[DocumentChunk], options: DedupeOptions) -> tuple[list[DocumentChunk], dict[str, Any]]:
    """Remove duplicate chunks; returns the kept chunks and the dedupe report."""
    if options.method != "exact":
        from indexfoundry.errors import ChunkError

        raise ChunkError(f"dedupe method '{options.method}' is not available in this build", suggestion="Use 'exact'")
    kept: list[DocumentChunk] = []
    first: dict[tuple[str, str], DocumentChunk] = {}
    removed: list[dict[str, Any]] = []
    groups: set[str] = set()
    for chunk in chunks:
        scope = chunk.doc_id if options.scope == "per_document" else ""
        key = (scope, chunk.content.text_hash)
        original = first.get(key)
        if original is None:
            first[key] = chunk
            kept.append(chunk)
            continue
        groups.add(original.chunk_id)
        removed.append(
            {
                "chunk_id": chunk.chunk_id,
                "uri": chunk.source.uri,
                "duplicate_of": original.chunk_id,
                "duplicate_of_uri": original.source.uri,
                "similarity": 1.0,
            }
        )
    report = {
        "method": options.method,
        "scope": options.scope,
        "similarity_threshold": options.similarity_threshold,
        "stats": {
            "input_chunks": len(chunks),
            "output_chunks": len(kept),
            "duplicates_removed": len(removed),
            "duplicate_groups": len(groups),
        },
        "removed": removed,
    }
    return kept, report
