"""Chunks built from spans: ids by place, not only by text; chunk stats and the chunker's config hash."""

from __future__ import annotations

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument, PageExtraction
from indexfoundry.phases.extract.markdown import find_headings
from indexfoundry.phases.normalize.build import build_chunks, chunk_stats, chunker_config
from indexfoundry.phases.normalize.chunkers import chunk_spans


def cfg(strategy: str, **kw: object) -> NormalizeConfig:
    return NormalizeConfig.model_validate({"chunk_strategy": strategy, **kw})


def doc_for(text: str, uri: str = "docs/a.md", doc_id: str = "d" * 64) -> ExtractedDocument:
    return ExtractedDocument(
        doc_id=doc_id,
        uri=uri,
        format="markdown",
        content_hash="c" * 64,
        content_type="text/markdown",
        text_path="extracted/x.txt",
        text_sha256="t" * 64,
        char_count=len(text),
        headings=find_headings(text),
    )


def chunks_of(text: str, config: NormalizeConfig, pages: list[PageExtraction] | None = None):
    return build_chunks(doc_for(text), text, chunk_spans(text, find_headings(text), config, pages))


def test_identical_paragraphs_at_different_places_get_different_ids():
    para = "The same paragraph, repeated word for word, appears twice in this document here."
    text = f"{para}\n\n{para}\n"
    chunks = chunks_of(text, cfg("by_paragraph", min_chars=50))
    same = [c for c in chunks if c.content.text == para]
    assert len(same) == 2
    assert same[0].content.text_hash == same[1].content.text_hash
    assert same[0].chunk_id != same[1].chunk_id


def test_stats_count_small_and_hard_cut_chunks_and_config_hash_follows_settings():
    text = "x" * 450 + "\n\nsmall"
    config = cfg("recursive", max_chars=200, overlap_chars=0)
    spans = chunk_spans(text, [], config)
    chunks = build_chunks(doc_for(text), text, spans)
    stats = chunk_stats(1, chunks, config, sum(s.hard_cut for s in spans))
    assert stats["chunks_at_max"] == 3 and stats["chunks_below_min"] == 1
    assert stats["chunks_created"] == len(chunks) and stats["total_chars"] == 457
    assert (
        chunker_config(config)["config_hash"]
        == chunker_config(cfg("recursive", max_chars=200, overlap_chars=0))["config_hash"]
    )
    assert chunker_config(config)["config_hash"] != chunker_config(cfg("recursive", max_chars=300))["config_hash"]
