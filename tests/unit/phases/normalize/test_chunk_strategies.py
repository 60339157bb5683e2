"""Behaviour of each chunking strategy on small hand-written documents."""

from __future__ import annotations

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument, PageExtraction
from indexfoundry.phases.extract.markdown import find_headings
from indexfoundry.phases.normalize.build import build_chunks, chunk_stats, chunker_config
from indexfoundry.phases.normalize.chunkers import PAGE_JOINER, chunk_spans


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


PARA = "Sentence number {i} explains one more detail of the configuration in plain words."

GUIDE = (
    "# Architecture\n\nIntro to the architecture of the system, long enough to stand alone as a section of text.\n\n"
    "## Data Flow\n\nHow data moves between the parts of the system, described in a paragraph of some length.\n\n"
    "### Event System\n\n" + "\n\n".join(PARA.format(i=i) for i in range(12)) + "\n\n"
    "## Storage\n\nWhere the data is kept on disk, and why it is kept there, in a paragraph of reasonable size.\n"
)


def test_by_heading_gives_every_chunk_its_breadcrumb_and_parts_a_marker():
    chunks = chunks_of(GUIDE, cfg("by_heading", max_chars=400, min_chars=50))
    paths = [c.metadata.heading_path for c in chunks]
    assert paths[0] == "Architecture"
    assert "Architecture > Data Flow" in paths
    event = [c for c in chunks if c.metadata.heading_path == "Architecture > Data Flow > Event System"]
    assert len(event) >= 3
    assert [c.metadata.part for c in event] == [f"{i}/{len(event)}" for i in range(1, len(event) + 1)]
    assert all(c.position.section == "Event System" for c in event)
    assert event[1].embedding_text().startswith(f"Architecture > Data Flow > Event System [part 2/{len(event)}]\n\n")
    assert chunks[-1].metadata.heading_path == "Architecture > Storage"
    assert all(c.content.char_count <= 400 for c in chunks)


def test_by_heading_merges_short_sections_into_their_parent_unless_disabled():
    text = "# Guide\n\nShort intro.\n\n## Install\n\nRun pip install.\n\n## Use\n\nCall the tool.\n"
    merged = chunks_of(text, cfg("by_heading", min_chars=100))
    assert len(merged) == 1 and merged[0].metadata.heading_path == "Guide"
    separate = chunks_of(text, cfg("by_heading", min_chars=100, merge_short_sections=False))
    assert [c.metadata.heading_path for c in separate] == ["Guide", "Guide > Install", "Guide > Use"]


def test_by_heading_never_cuts_a_code_fence_that_fits_and_ignores_headings_inside_it():
    code = "```python\n# not a heading\n" + "\n".join(f"value_{i} = {i}" for i in range(20)) + "\n\nprint(1)\n```"
    text = (
        "# Code\n\n" + PARA.format(i=1) + "\n\n" + PARA.format(i=2) + "\n\n" + code + "\n\n" + PARA.format(i=3) + "\n"
    )
    assert len(code) < 400
    chunks = chunks_of(text, cfg("by_heading", max_chars=400, min_chars=50))
    assert len(chunks) > 1
    assert sum(code in c.content.text for c in chunks) == 1
    assert all(c.position.section == "Code" for c in chunks)


def test_a_code_fence_too_long_is_reopened_and_closed_in_every_part():
    code = "```python\n" + "\n".join(f"line_{i} = {i}  # some comment" for i in range(60)) + "\n```"
    text = "# Big\n\nIntro paragraph.\n\n" + code + "\n"
    chunks = chunks_of(text, cfg("by_heading", max_chars=300, min_chars=50))
    fence_parts = [c for c in chunks if "line_" in c.content.text]
    assert len(fence_parts) > 2
    for chunk in fence_parts:
        body = chunk.content.text[chunk.content.text.index("```python") :]
        assert body.startswith("```python\n")
        assert chunk.content.text.rstrip().endswith("```")
        assert chunk.content.char_count <= 300
    raw = text.encode()
    for chunk in fence_parts[1:]:
        layout = chunk.metadata.custom["text_layout"]
        piece = raw[chunk.position.byte_start : chunk.position.byte_end].decode()
        assert chunk.content.text == layout["prefix"] + piece + layout["suffix"]
        assert layout["prefix"] == "```python\n"


def test_a_table_too_long_repeats_its_header_row_in_every_part():
    rows = "\n".join(f"| option_{i} | the value of option {i} |" for i in range(40))
    text = "# Options\n\n| name | value |\n| --- | --- |\n" + rows + "\n"
    chunks = chunks_of(text, cfg("by_heading", max_chars=300, min_chars=50))
    table_parts = [c for c in chunks if "option_" in c.content.text]
    assert len(table_parts) > 2
    for chunk in table_parts:
        table = chunk.content.text[chunk.content.text.index("| name") :]
        assert table.startswith("| name | value |\n| --- | --- |\n| option_")
        assert chunk.content.char_count <= 300
    assert "text_layout" not in (table_parts[0].metadata.custom or {})
    raw = text.encode()
    for chunk in table_parts[1:]:
        layout = chunk.metadata.custom["text_layout"]
        assert layout["prefix"] == "| name | value |\n| --- | --- |\n"
        piece = raw[chunk.position.byte_start : chunk.position.byte_end].decode()
        assert chunk.content.text == layout["prefix"] + piece
        assert piece.startswith("| option_")
    seen = [line for c in table_parts for line in c.content.text.splitlines() if line.startswith("| option_")]
    assert seen == [f"| option_{i} | the value of option {i} |" for i in range(40)]


def test_identical_paragraphs_at_different_places_get_different_ids():
    para = "The same paragraph, repeated word for word, appears twice in this document here."
    text = f"{para}\n\n{para}\n"
    chunks = chunks_of(text, cfg("by_paragraph", min_chars=50))
    same = [c for c in chunks if c.content.text == para]
    assert len(same) == 2
    assert same[0].content.text_hash == same[1].content.text_hash
    assert same[0].chunk_id != same[1].chunk_id


def test_fixed_chars_cuts_windows_of_max_chars_with_overlap():
    text = "abcdefghij" * 50
    chunks = chunks_of(text, cfg("fixed_chars", max_chars=100, overlap_chars=20, min_chars=50))
    assert [c.position.byte_start for c in chunks] == list(range(0, 420, 80))
    assert all(c.content.char_count == 100 for c in chunks[:-1])
    assert chunks[1].content.text[:20] == chunks[0].content.text[-20:]


def test_by_paragraph_keeps_paragraphs_apart_and_joins_short_ones():
    long_a = "First paragraph " + "with many words " * 8
    long_b = "Second paragraph " + "with other words " * 8
    text = f"{long_a.strip()}\n\nTiny.\n\n{long_b.strip()}\n"
    chunks = chunks_of(text, cfg("by_paragraph", min_chars=50, max_chars=500))
    assert [c.content.text for c in chunks] == [long_a.strip(), "Tiny.\n\n" + long_b.strip()]


def test_by_sentence_keeps_abbreviations_and_decimals_inside_sentences():
    sentences = [
        "Dr. Smith measured 3.14 litres at 9 a.m. on the first day.",
        "The result, i.e. the volume, was recorded by Mr. Jones.",
        "Everything was checked twice before the report went out.",
    ]
    text = " ".join(sentences * 3)
    chunks = chunks_of(text, cfg("by_sentence", max_chars=130, overlap_chars=0, min_chars=50))
    for chunk in chunks:
        assert chunk.content.text.startswith(("Dr. Smith", "The result", "Everything"))
        assert chunk.content.text.endswith(".")


def test_by_sentence_splits_german_text_with_german_rules():
    text = (
        "Die Sitzung begann am 3. Oktober um zehn Uhr im großen Saal des Rathauses. "
        "Der Vorsitzende, Prof. Dr. Müller, eröffnete die Versammlung mit einer kurzen Rede. "
        "Danach wurden die Berichte der einzelnen Arbeitsgruppen ausführlich vorgestellt."
    )
    chunks = chunks_of(text, cfg("by_sentence", max_chars=100, overlap_chars=0, min_chars=50))
    assert [c.content.text[:12] for c in chunks] == ["Die Sitzung ", "Der Vorsitze", "Danach wurde"]


def test_by_page_keeps_page_numbers_and_splits_long_pages_inside_the_page():
    texts = ["Page one text. " * 5, "Page two is longer. " * 30, "", "Page four. " * 3]
    text = PAGE_JOINER.join(texts)
    pages = [
        PageExtraction(page=i, text=t, char_count=len(t), is_empty=not t, ocr_used=False)
        for i, t in enumerate(texts, start=1)
    ]
    chunks = chunks_of(text, cfg("by_page", max_chars=200, overlap_chars=0, min_chars=50), pages)
    assert chunks[0].position.page == 1
    assert {c.position.page for c in chunks} == {1, 2, 4}
    assert sum(c.position.page == 2 for c in chunks) > 1
    assert all("Page two" in c.content.text for c in chunks if c.position.page == 2)
    # Other strategies on a paged document still tell the page each chunk starts on.
    recursive = chunks_of(text, cfg("recursive", max_chars=200, overlap_chars=0), pages)
    assert [c.position.page for c in recursive] == sorted(c.position.page or 0 for c in recursive)
    assert recursive[0].position.page == 1 and all(c.position.page for c in recursive)


def test_by_page_without_pages_uses_form_feeds_or_falls_back_to_recursive():
    fed = chunks_of("First page text.\fSecond page text.", cfg("by_page"))
    assert [(c.position.page, c.content.text) for c in fed] == [(1, "First page text."), (2, "Second page text.")]
    plain = chunks_of("No pages here at all.", cfg("by_page"))
    assert [(c.position.page, c.content.text) for c in plain] == [(None, "No pages here at all.")]


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


def test_unknown_strategy_is_a_chunk_error():
    config = NormalizeConfig.model_construct(**{**NormalizeConfig().model_dump(), "chunk_strategy": "by_magic"})
    with pytest.raises(IndexFoundryError) as info:
        chunk_spans("text", [], config)
    assert info.value.code == "CHUNK_ERROR"


def test_a_heading_only_section_folds_into_its_first_child_not_onto_the_end_of_its_parent():
    intro = "Intro paragraph of the guide, long enough to be a section of its own in every configuration."
    colours = "Set theme.palette to pick colours; dark and light palettes are built in, custom ones take hex."
    text = f"# Guide\n\n{intro}\n\n## Theme\n\n### Colours\n\n{colours}\n"
    chunks = chunks_of(text, cfg("by_heading", min_chars=80))
    assert [c.metadata.heading_path for c in chunks] == ["Guide", "Guide > Theme > Colours"]
    assert chunks[0].content.text == f"# Guide\n\n{intro}"
    assert chunks[1].content.text.startswith("## Theme\n\n### Colours\n\n")
