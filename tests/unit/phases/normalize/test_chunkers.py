"""Behaviour of each chunking strategy on small hand-written documents, and the properties every
strategy keeps on generated ones (no text lost, max_chars respected, stable ids and offsets)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument, PageExtraction
from indexfoundry.phases.extract.markdown import find_headings
from indexfoundry.phases.normalize.build import build_chunks
from indexfoundry.phases.normalize.chunkers import PAGE_JOINER, chunk_spans
from indexfoundry.phases.normalize.packing import Span


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


# Properties every chunking strategy must keep, on generated markdown-like documents:
# no text is lost, max_chars holds, text matches offsets, and ids are stable.

WORDS = [
    "alpha",
    "beta",
    "Dr.",
    "3.14",
    "über",
    "naïve",
    "x",
    "résumé",
    "日本語",
    "end.",
    "why?",
    "a,",
    "longwordwithoutanybreaksatall" * 3,
]

word = st.sampled_from(WORDS)
sentence = st.lists(word, min_size=1, max_size=30).map(lambda ws: " ".join(ws) + ".")
paragraph = st.lists(sentence, min_size=1, max_size=8).map(" ".join)
heading = st.tuples(st.integers(1, 4), st.lists(word, min_size=1, max_size=4)).map(
    lambda t: "#" * t[0] + " " + " ".join(t[1]).replace("#", "")
)
fence = st.lists(st.one_of(paragraph, st.just("# not a heading"), st.just("")), min_size=1, max_size=12).map(
    lambda lines: "```python\n" + "\n".join(lines) + "\n```"
)
table = st.integers(1, 30).map(
    lambda rows: (
        "| name | value |\n| --- | --- |\n" + "\n".join(f"| row {i} | {'v' * (i % 7 + 1)} |" for i in range(rows))
    )
)
block = st.one_of(paragraph, paragraph, heading, fence, table, st.just("a\n\n\n   \n"), st.just("x" * 450))
document = st.lists(block, min_size=0, max_size=14).map("\n\n".join)

STRATEGIES = ["fixed_chars", "by_paragraph", "by_heading", "by_page", "by_sentence", "recursive"]


def config_for(strategy: str, max_chars: int, overlap: int) -> NormalizeConfig:
    return NormalizeConfig(chunk_strategy=strategy, max_chars=max_chars, min_chars=50, overlap_chars=overlap)  # type: ignore[arg-type]


def pages_of(text: str) -> tuple[str, list[PageExtraction]]:
    """Split a generated text into pages at its blank lines and join them back as the extractor does."""
    pieces = [p for p in text.split("\n\n\n") if p] or [""]
    pages = [
        PageExtraction(page=i, text=p, char_count=len(p), is_empty=not p.strip(), ocr_used=False)
        for i, p in enumerate(pieces, start=1)
    ]
    return PAGE_JOINER.join(pieces), pages


def spans_for(strategy: str, text: str, config: NormalizeConfig) -> tuple[str, list[Span], Any]:
    pages = None
    if strategy == "by_page":
        text, pages = pages_of(text)
    return text, chunk_spans(text, find_headings(text), config, pages), pages


def check_properties(strategy: str, text: str, max_chars: int, overlap: int) -> None:
    config = config_for(strategy, max_chars, overlap)
    text, spans, pages = spans_for(strategy, text, config)
    covered = bytearray(len(text))
    for span in spans:
        assert 0 <= span.start < span.end <= len(text)
        assert span.length <= max_chars, (strategy, span)
        assert span.text(text) == span.prefix + text[span.start : span.end] + span.suffix
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    lost = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not lost, (strategy, text[lost[0] : lost[0] + 30])
    # Spans appear in document order.
    assert [s.start for s in spans] == sorted(s.start for s in spans)
    # Deterministic: the same input gives the same spans.
    assert chunk_spans(text, find_headings(text), config, pages) == spans


common = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(document, st.sampled_from([100, 160, 400]), st.sampled_from([0, 20, 60]))
def test_fixed_chars_loses_no_text_and_respects_max_chars(text: str, max_chars: int, overlap: int) -> None:
    check_properties("fixed_chars", text, max_chars, overlap)


@common
@given(document, st.sampled_from([100, 160, 400]), st.sampled_from([0, 20, 60]))
def test_by_paragraph_loses_no_text_and_respects_max_chars(text: str, max_chars: int, overlap: int) -> None:
    check_properties("by_paragraph", text, max_chars, overlap)


@common
@given(document, st.sampled_from([100, 160, 400]), st.sampled_from([0, 20, 60]))
def test_by_heading_loses_no_text_and_respects_max_chars(text: str, max_chars: int, overlap: int) -> None:
    check_properties("by_heading", text, max_chars, overlap)


@common
@given(document, st.sampled_from([100, 160, 400]), st.sampled_from([0, 20, 60]))
def test_by_page_loses_no_text_and_respects_max_chars(text: str, max_chars: int, overlap: int) -> None:
    check_properties("by_page", text, max_chars, overlap)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document, st.sampled_from([100, 400]), st.sampled_from([0, 60]))
def test_by_sentence_loses_no_text_and_respects_max_chars(text: str, max_chars: int, overlap: int) -> None:
    check_properties("by_sentence", text, max_chars, overlap)


@common
@given(document, st.sampled_from([100, 160, 400]), st.sampled_from([0, 20, 60]))
def test_recursive_loses_no_text_and_respects_max_chars(text: str, max_chars: int, overlap: int) -> None:
    check_properties("recursive", text, max_chars, overlap)


def _doc(text: str, uri: str = "docs/a.md") -> ExtractedDocument:
    return ExtractedDocument(
        doc_id="d" * 64,
        uri=uri,
        format="markdown",
        content_hash="c" * 64,
        content_type="text/markdown",
        text_path="extracted/x.txt",
        text_sha256="t" * 64,
        char_count=len(text),
        headings=find_headings(text),
    )


@settings(max_examples=40, deadline=None)
@given(document, st.sampled_from(STRATEGIES))
def test_chunk_ids_are_stable_unique_and_offsets_address_the_text(text: str, strategy: str) -> None:
    config = config_for(strategy, 200, 30)
    text, spans, pages = spans_for(strategy, text, config)
    first = build_chunks(_doc(text), text, spans)
    again = build_chunks(_doc(text), text, chunk_spans(text, find_headings(text), config, pages))
    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]
    assert len({c.chunk_id for c in first}) == len(first)
    raw = text.encode("utf-8")
    for chunk in first:
        piece = raw[chunk.position.byte_start : chunk.position.byte_end].decode("utf-8")
        layout = (chunk.metadata.custom or {}).get("text_layout")
        if layout is None:
            assert chunk.content.text == piece
        else:
            assert chunk.content.text == layout["prefix"] + piece + layout["suffix"]
        assert chunk.content.char_count == len(chunk.content.text)
        assert chunk.content.token_count_approx == (len(chunk.content.text) + 3) // 4
