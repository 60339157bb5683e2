"""Rule-based enrichment of chunks (no LLM)."""

from __future__ import annotations

from typing import Any

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import DocumentChunk


def enrich_chunks(chunks: list[DocumentChunk], config: NormalizeConfig) -> tuple[list[DocumentChunk], dict[str, Any]]:
    """Apply the configured enrichment rules; returns the chunks and the enrichment report."""
    report: dict[str, Any] = {
        "rules": config.enrich.model_dump(mode="json") if config.enrich else None,
        "detect_language": False,
        "chunks_enriched": 0,
    }
    return chunks, report
