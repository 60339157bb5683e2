"""Properties every chunking strategy must keep, on generated markdown-like documents:
no text is lost, max_chars holds, text matches offsets, and ids are stable."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument, PageExtraction
from indexfoundry.phases.extract.markdown import find_headings
from indexfoundry.phases.normalize.build import build_chunks
from indexfoundry.phases.normalize.chunkers import PAGE_JOINER, chunk_spans
from indexfoundry.phases.normalize.packing import Span

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
