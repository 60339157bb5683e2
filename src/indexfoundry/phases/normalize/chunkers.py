"""Chunking strategies: ``recursive``, ``fixed_chars``, ``by_paragraph``, ``by_sentence``,
``by_page`` and ``by_heading``, and ``chunk_spans``, which applies the configured one.

Every strategy returns spans (``packing.Span``: character offsets into the document's extracted
text, plus a prefix and suffix for the parts of a long table or code fence) built from the
atoms and packing of ``phases/normalize/packing.py``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace

from indexfoundry.errors import ChunkError
from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import Heading, PageExtraction
from indexfoundry.phases.normalize.blocks import split_blocks
from indexfoundry.phases.normalize.packing import (
    PARAGRAPH_SEPS,
    Atom,
    Span,
    block_atoms,
    merge_atoms,
    pack,
    pack_small,
    plain_atoms,
    spans_of,
    split_atoms,
    structured_atoms,
    trim,
    trimmed,
)
from indexfoundry.phases.normalize.positions import TextPositions

# Separators for splitting one oversized sentence, coarse to fine.
_SENTENCE_SEPS = ["\n", "; ", ", ", " "]
# Pages of a paged document are joined with this in its extracted text.
PAGE_JOINER = "\n\n"


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    level: int  # 0 for text before the first heading
    title: str | None
    path: str | None


# ------------------------------------------------------------------ recursive / fixed
def recursive_spans(text: str, config: NormalizeConfig, start: int = 0, end: int | None = None) -> list[Span]:
    """The ``recursive`` strategy over [start, end)."""
    stop = len(text) if end is None else end
    atoms = split_atoms(text, start, stop, list(config.split_hierarchy), config.max_chars)
    merged = merge_atoms(atoms, config.max_chars, config.overlap_chars)
    return trimmed(text, (Span(s, e, hard_cut=h) for s, e, h in merged))


def fixed_spans(text: str, config: NormalizeConfig) -> list[Span]:
    """The ``fixed_chars`` strategy: windows of ``max_chars`` every ``max_chars - overlap``
    characters, cut wherever the count falls (every cut window is a hard cut)."""
    size = config.max_chars
    step = max(1, size - config.overlap_chars)
    spans: list[Span] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        spans.append(Span(start, end, hard_cut=end < len(text)))
        if end >= len(text):
            break
        start += step
    return trimmed(text, spans)


# ------------------------------------------------------------------ by_paragraph / by_sentence
def paragraph_spans(text: str, config: NormalizeConfig) -> list[Span]:
    """The ``by_paragraph`` strategy: one chunk per paragraph (blank-line separated; code
    fences and tables count as one paragraph). Paragraphs under ``min_chars`` join the next
    one; paragraphs over ``max_chars`` split at lines, sentences, then words, and the pieces
    are packed into parts of up to ``max_chars`` (not one chunk per line or word)."""

    def atoms() -> Iterator[Atom]:
        for block in split_blocks(text, 0, len(text)):
            if block.kind == "text" and block.end - block.start > config.max_chars:
                pieces = plain_atoms(text, block.start, block.end, PARAGRAPH_SEPS, config.max_chars)
                yield from pack(pieces, config.max_chars, 0)
            else:
                yield from block_atoms(text, block, config.max_chars)

    return trimmed(text, spans_of(pack_small(atoms(), config.min_chars, config.max_chars)))


def sentence_spans_of(text: str, config: NormalizeConfig, language: str | None = None) -> list[Span]:
    """The ``by_sentence`` strategy: sentences (pysbd, in the document's language when pysbd
    supports it) packed up to ``max_chars`` with sentence-aligned overlap. Fences and
    tables are kept whole when they fit."""
    from indexfoundry.phases.normalize.sentences import segmenter_language, sentence_spans

    lang = language or segmenter_language(text)

    def atoms() -> Iterator[Atom]:
        for block in split_blocks(text, 0, len(text)):
            if block.kind != "text":
                yield from block_atoms(text, block, config.max_chars)
                continue
            for s, e in sentence_spans(text, block.start, block.end, lang):
                yield from plain_atoms(text, s, e, _SENTENCE_SEPS, config.max_chars)

    return trimmed(text, spans_of(pack(atoms(), config.max_chars, config.overlap_chars)))


# ------------------------------------------------------------------ by_page
def page_ranges(text: str, pages: list[PageExtraction]) -> list[tuple[int, int, int]]:
    """(page number, start, end) of each page's text inside the extracted text.

    The extractor joins page texts with ``PAGE_JOINER`` in page order; each page is located
    from a moving cursor so a different joiner still gives exact offsets.
    """
    ranges: list[tuple[int, int, int]] = []
    cursor = 0
    for page in sorted(pages, key=lambda p: p.page):
        if not page.text:
            continue
        if text.startswith(page.text, cursor):
            found = cursor
        else:
            found = text.find(page.text, cursor)
            if found == -1:
                continue
        ranges.append((page.page, found, found + len(page.text)))
        cursor = found + len(page.text)
    return ranges


def _form_feed_pages(text: str) -> list[tuple[int, int, int]]:
    ranges: list[tuple[int, int, int]] = []
    start = 0
    for number, piece in enumerate(text.split("\f"), start=1):
        ranges.append((number, start, start + len(piece)))
        start += len(piece) + 1
    return ranges


def page_spans(text: str, config: NormalizeConfig, pages: list[PageExtraction] | None) -> list[Span]:
    """The ``by_page`` strategy: one chunk per page, pages over ``max_chars`` split
    recursively inside the page. Documents without pages use form feeds as page breaks
    when they have them, else are chunked recursively without page numbers."""
    ranges = page_ranges(text, pages) if pages else []
    if not ranges and "\f" in text:
        ranges = _form_feed_pages(text)
    if not ranges:
        return recursive_spans(text, config)
    spans: list[Span] = []
    for number, start, end in ranges:
        spans.extend(replace(s, page=number) for s in recursive_spans(text, config, start, end))
    return spans


def assign_pages(spans: list[Span], ranges: list[tuple[int, int, int]]) -> list[Span]:
    """Give every span without a page the page its first character is on."""
    if not ranges:
        return spans
    starts = [start for _, start, _ in ranges]
    out: list[Span] = []
    for span in spans:
        if span.page is None:
            index = max(0, bisect_right(starts, span.start) - 1)
            span = replace(span, page=ranges[index][0])
        out.append(span)
    return out


# ------------------------------------------------------------------ by_heading
def heading_sections(text: str, headings: list[Heading]) -> list[Section]:
    """Split a document into sections at its headings, each with its breadcrumb."""
    positions = TextPositions(text)
    bounds: list[tuple[int, Heading]] = []
    for heading in headings:
        start = positions.line_start(heading.line)
        if start is not None:
            bounds.append((start, heading))
    bounds.sort(key=lambda b: b[0])
    sections: list[Section] = []
    first = bounds[0][0] if bounds else len(text)
    if text[:first].strip():
        sections.append(Section(0, first, 0, None, None))
    stack: list[tuple[int, str]] = []
    for index, (start, heading) in enumerate(bounds):
        end = bounds[index + 1][0] if index + 1 < len(bounds) else len(text)
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.text))
        path = " > ".join(title for _, title in stack)
        sections.append(Section(start, end, heading.level, heading.text, path))
    return sections


def _is_ancestor(parent: Section, child: Section) -> bool:
    if parent.path is None:
        return child.level > 0
    return child.path is not None and child.level > parent.level and child.path.startswith(parent.path + " > ")


def _heading_only(text: str, section: Section) -> bool:
    """True if the section holds nothing but its heading line."""
    if section.level == 0:
        return False
    line_end = text.find("\n", section.start, section.end)
    return line_end == -1 or not text[line_end : section.end].strip()


def _merge_short(text: str, sections: list[Section], config: NormalizeConfig) -> list[Section]:
    """Fold short sections into their neighbours while the result stays within ``max_chars``:
    a heading-only section goes into its first child (whose breadcrumb contains it), a section
    shorter than ``min_chars`` into its parent section just before it (keeping the parent's
    breadcrumb), and a short parent into its first child."""
    units: list[Section] = []
    carry: int | None = None
    for index, section in enumerate(sections):
        if carry is not None:
            section = replace(section, start=carry)
            carry = None
        nxt = sections[index + 1] if index + 1 < len(sections) else None
        if (
            nxt is not None
            and _heading_only(text, section)
            and _is_ancestor(section, nxt)
            and nxt.end - section.start <= config.max_chars
        ):
            carry = section.start
            continue
        prev = units[-1] if units else None
        if (
            prev is not None
            and prev.end == section.start
            and _is_ancestor(prev, section)
            and section.end - prev.start <= config.max_chars
        ):
            if section.end - section.start < config.min_chars:
                units[-1] = replace(prev, end=section.end)
                continue
            if prev.end - prev.start < config.min_chars:
                units[-1] = replace(section, start=prev.start)
                continue
        units.append(section)
    return units


def _split_section(text: str, unit: Section, config: NormalizeConfig) -> list[Span]:
    """Split a section over ``max_chars`` at paragraph boundaries; code fences and tables stay
    whole when they fit. Every part keeps the breadcrumb and gets a part marker."""
    fields: dict[str, object] = {
        "section": unit.title,
        "heading_path": unit.path,
        "heading_level": unit.level or None,
    }
    s, e = trim(text, unit.start, unit.end)
    if e - s <= config.max_chars:
        return trimmed(text, spans_of([Atom(unit.start, unit.end)], **fields))
    atoms = structured_atoms(text, unit.start, unit.end, config.max_chars)
    parts = trimmed(text, spans_of(pack(atoms, config.max_chars, 0), **fields))
    if len(parts) > 1:
        parts = [replace(p, part=f"{i}/{len(parts)}") for i, p in enumerate(parts, start=1)]
    return parts


def by_heading_spans(text: str, headings: list[Heading], config: NormalizeConfig) -> list[Span]:
    """The ``by_heading`` strategy: one chunk per section, with breadcrumbs."""
    sections = heading_sections(text, headings)
    if config.merge_short_sections:
        sections = _merge_short(text, sections, config)
    spans: list[Span] = []
    for unit in sections:
        spans.extend(_split_section(text, unit, config))
    return spans


# ------------------------------------------------------------------ dispatch
def chunk_spans(
    text: str,
    headings: list[Heading],
    config: NormalizeConfig,
    pages: list[PageExtraction] | None = None,
) -> list[Span]:
    """Chunk one document with the configured strategy; paged documents get page numbers."""
    strategy = config.chunk_strategy
    if strategy == "recursive":
        spans = recursive_spans(text, config)
    elif strategy == "by_heading":
        spans = by_heading_spans(text, headings, config)
    elif strategy == "fixed_chars":
        spans = fixed_spans(text, config)
    elif strategy == "by_paragraph":
        spans = paragraph_spans(text, config)
    elif strategy == "by_sentence":
        spans = sentence_spans_of(text, config)
    elif strategy == "by_page":
        return page_spans(text, config, pages)
    else:
        raise ChunkError(
            f"unknown chunk strategy '{strategy}'",
            suggestion="Use fixed_chars, by_paragraph, by_heading, by_page, by_sentence or recursive",
        )
    if pages:
        spans = assign_pages(spans, page_ranges(text, pages))
    return spans
