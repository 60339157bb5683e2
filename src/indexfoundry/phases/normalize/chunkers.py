"""Chunking strategies. Every chunker returns spans (character offsets into the document's
extracted text) so that each chunk's text is a slice of that text and its id can be derived
from its position.

The one exception is a table or code fence too long for one chunk: its parts after the first
repeat the table's header rows (or re-open the fence) as a ``prefix``, and a cut fence is
closed again with a ``suffix``; the chunk text is then ``prefix + slice + suffix``.

Memory is bounded by design: atoms (the pieces between separators) are produced and packed
as streams, so a chunker holds the atoms of about one chunk at a time, never one object per
separator of the document; and a run of one separator (an indentation of 10,000 spaces, a
page of blank lines) is one atom, not one per character.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cache

from indexfoundry.errors import ChunkError
from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import Heading, PageExtraction
from indexfoundry.phases.normalize.blocks import Block, split_blocks
from indexfoundry.phases.normalize.positions import TextPositions

# Separators for splitting one oversized paragraph or sentence, coarse to fine.
_PARAGRAPH_SEPS = ["\n", ". ", " "]
_SENTENCE_SEPS = ["\n", "; ", ", ", " "]
# Pages of a paged document are joined with this in its extracted text.
PAGE_JOINER = "\n\n"


@dataclass(frozen=True, slots=True)
class Span:
    """A chunk before it becomes a ``DocumentChunk``: [start, end) in characters.

    ``hard_cut`` marks a chunk cut at ``max_chars`` because no separator was left.
    """

    start: int
    end: int
    hard_cut: bool = False
    section: str | None = None
    heading_path: str | None = None
    heading_level: int | None = None
    part: str | None = None
    page: int | None = None
    prefix: str = ""
    suffix: str = ""

    @property
    def length(self) -> int:
        return len(self.prefix) + (self.end - self.start) + len(self.suffix)

    def text(self, text: str) -> str:
        return self.prefix + text[self.start : self.end] + self.suffix


@dataclass(frozen=True, slots=True)
class Atom:
    """A unit chunkers pack together; atoms with a prefix start a chunk, with a suffix end one."""

    start: int
    end: int
    hard: bool = False
    prefix: str = ""
    suffix: str = ""


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    level: int  # 0 for text before the first heading
    title: str | None
    path: str | None


# ------------------------------------------------------------------ splitting and packing
@cache
def _separator_run(sep: str) -> re.Pattern[str]:
    # Possessive: a plain group repetition keeps ~32 bytes of backtracking state per repetition.
    return re.compile(f"(?:{re.escape(sep)})++")


def split_atoms(text: str, start: int, end: int, seps: list[str], max_chars: int) -> Iterator[tuple[int, int, bool]]:
    """Split [start, end) into contiguous pieces of at most ``max_chars``, in order.

    Tries each separator in turn; a run of the separator stays at the end of the piece before
    it (one piece per run, not per repetition). A piece with no separator left is hard-cut at
    ``max_chars`` (flagged True).
    """
    if end - start <= max_chars:
        yield (start, end, False)
        return
    for i, sep in enumerate(seps):
        if not sep or text.find(sep, start, end) == -1:
            continue
        run = _separator_run(sep)
        pos = start
        while pos < end:
            idx = text.find(sep, pos, end)
            if idx == -1:
                idx = piece_end = end
            else:
                match = run.match(text, idx, end)
                piece_end = match.end() if match else min(idx + len(sep), end)
            if piece_end - pos <= max_chars:
                yield (pos, piece_end, False)
            elif piece_end - idx > max_chars:
                # A run of the separator longer than a chunk: the text before it is split
                # further, the run itself cut in windows (a cut inside a run is no hard cut;
                # splitting it at finer separators would give one piece per repetition).
                if idx > pos:
                    yield from split_atoms(text, pos, idx, seps[i + 1 :], max_chars)
                for s in range(idx, piece_end, max_chars):
                    yield (s, min(s + max_chars, piece_end), False)
            else:
                yield from split_atoms(text, pos, piece_end, seps[i + 1 :], max_chars)
            pos = piece_end
        return
    for s in range(start, end, max_chars):
        yield (s, min(s + max_chars, end), True)


def _fits(first: Atom, last: Atom, max_chars: int) -> bool:
    return len(first.prefix) + (last.end - first.start) + len(last.suffix) <= max_chars


def pack(atoms: Iterable[Atom], max_chars: int, overlap: int) -> Iterator[Atom]:
    """Greedily pack contiguous atoms into chunks of at most ``max_chars``, with overlap.

    The next chunk starts at the trailing atoms of the previous one that fit in ``overlap``
    characters (never repeating a whole chunk, always making progress). Atoms with a prefix
    only start a chunk and atoms with a suffix only end one. Reads ``atoms`` lazily and holds
    only the atoms of the chunk being packed (plus one).
    """
    stream = iter(atoms)
    buf: list[Atom] = []  # buf[0] is the first atom of the chunk being packed

    def fill(count: int) -> bool:
        """Make ``buf`` hold ``count`` atoms; False if the stream ends first."""
        while len(buf) < count:
            atom = next(stream, None)
            if atom is None:
                return False
            buf.append(atom)
        return True

    if not fill(1):
        return
    while True:
        first = buf[0]
        j = 0
        hard = first.hard
        while fill(j + 2) and not buf[j].suffix and not buf[j + 1].prefix and _fits(first, buf[j + 1], max_chars):
            j += 1
            hard = hard or buf[j].hard
        yield Atom(first.start, buf[j].end, hard, first.prefix, buf[j].suffix)
        if not fill(j + 2):
            return
        k = j + 1
        if overlap and not buf[j].suffix and not buf[j + 1].prefix:
            while (
                k - 1 > 0
                and not buf[k - 1].prefix
                and buf[j].end - buf[k - 1].start <= overlap
                and _fits(buf[k - 1], buf[j + 1], max_chars)
            ):
                k -= 1
        del buf[:k]


def merge_atoms(
    atoms: Iterable[tuple[int, int, bool]], max_chars: int, overlap: int
) -> Iterator[tuple[int, int, bool]]:
    """``pack`` for plain (start, end, hard) tuples."""
    for a in pack((Atom(s, e, h) for s, e, h in atoms), max_chars, overlap):
        yield (a.start, a.end, a.hard)


def pack_small(atoms: Iterable[Atom], min_chars: int, max_chars: int) -> Iterator[Atom]:
    """Join an atom shorter than ``min_chars`` with its next neighbour (a short last atom with
    its previous one) while the result stays within ``max_chars``."""
    stream = iter(atoms)
    prev: Atom | None = None
    atom = next(stream, None)
    while atom is not None:
        following = next(stream, None)
        if prev is not None:
            short = _length(prev) < min_chars or (following is None and _length(atom) < min_chars)
            if short and not prev.suffix and not atom.prefix and _fits(prev, atom, max_chars):
                prev = Atom(prev.start, atom.end, prev.hard or atom.hard, prev.prefix, atom.suffix)
                atom = following
                continue
            yield prev
        prev = atom
        atom = following
    if prev is not None:
        yield prev


def _length(atom: Atom) -> int:
    return len(atom.prefix) + atom.end - atom.start + len(atom.suffix)


def trim(text: str, start: int, end: int, keep_indent: bool = False) -> tuple[int, int]:
    """Shrink [start, end) so it neither starts nor ends with whitespace (with ``keep_indent``
    only blank lines are dropped at the start, so a code line keeps its indentation)."""
    piece = text[start:end]
    if keep_indent:
        body = piece.lstrip("\r\n")
        if not body.strip():
            return end, end
    else:
        body = piece.lstrip()
    start += len(piece) - len(body)
    return start, start + len(body.rstrip())


def _trimmed(text: str, spans: Iterable[Span]) -> list[Span]:
    out: list[Span] = []
    for span in spans:
        s, e = trim(text, span.start, span.end, keep_indent=bool(span.prefix))
        if e > s:
            out.append(replace(span, start=s, end=e))
    return out


def _spans(atoms: Iterable[Atom], **fields: object) -> Iterator[Span]:
    for a in atoms:
        yield Span(a.start, a.end, hard_cut=a.hard, prefix=a.prefix, suffix=a.suffix, **fields)  # type: ignore[arg-type]


# ------------------------------------------------------------------ structured blocks
def _plain_atoms(text: str, start: int, end: int, seps: list[str], max_chars: int) -> Iterator[Atom]:
    for s, e, h in split_atoms(text, start, end, seps, max_chars):
        yield Atom(s, e, h)


def _table_atoms(text: str, block: Block, max_chars: int) -> Iterable[Atom]:
    """A table over ``max_chars`` split between rows; every part after the first repeats
    the header and delimiter rows as its prefix."""
    assert block.head_end is not None
    header = text[block.start : block.head_end]
    if not header.endswith("\n"):
        header += "\n"
    budget = max_chars - len(header)
    if budget < max_chars // 4:  # a header this large is not worth repeating
        return _plain_atoms(text, block.start, block.end, _PARAGRAPH_SEPS, max_chars)
    parts: list[Atom] = []
    current = Atom(block.start, block.head_end)
    for row_start, row_end, hard in split_atoms(text, block.head_end, block.end, ["\n", " | ", " "], budget):
        row = Atom(row_start, row_end, hard, prefix=header)
        if _fits(current, row, max_chars):
            current = Atom(current.start, row.end, current.hard or row.hard, current.prefix)
        else:
            parts.append(current)
            current = row
    parts.append(current)
    return parts


def _fence_atoms(text: str, block: Block, max_chars: int) -> Iterable[Atom]:
    """A code fence over ``max_chars`` split between lines; a cut part is closed again with
    the fence marker and the next part re-opens it with the opener line."""
    assert block.head_end is not None
    opener = text[block.start : block.head_end]
    if not opener.endswith("\n"):
        opener += "\n"
    indent = opener[: len(opener) - len(opener.lstrip())]
    marker = opener.strip()[:3]
    run = len(opener.strip()) - len(opener.strip().lstrip(marker[0]))
    close = "\n" + indent + marker[0] * run
    body_end = block.closer_start if block.closer_start is not None else block.end
    budget = max_chars - len(opener) - len(close)
    if budget < max_chars // 4:
        return _plain_atoms(text, block.start, block.end, _PARAGRAPH_SEPS, max_chars)
    lines = (Atom(s, e, h) for s, e, h in split_atoms(text, block.head_end, body_end, ["\n", " "], budget))
    bodies = list(pack(lines, budget, 0)) or [Atom(block.head_end, body_end)]
    parts: list[Atom] = []
    for index, body in enumerate(bodies):
        first = index == 0
        last = index == len(bodies) - 1
        parts.append(
            Atom(
                block.start if first else body.start,
                block.end if last else body.end,
                body.hard,
                prefix="" if first else opener,
                suffix="" if last else close,
            )
        )
    return parts


def block_atoms(text: str, block: Block, max_chars: int) -> Iterable[Atom]:
    """A block as one atom when it fits, else its parts."""
    if block.end - block.start <= max_chars:
        return [Atom(block.start, block.end)]
    if block.kind == "table":
        return _table_atoms(text, block, max_chars)
    if block.kind == "fence":
        return _fence_atoms(text, block, max_chars)
    return _plain_atoms(text, block.start, block.end, _PARAGRAPH_SEPS, max_chars)


def structured_atoms(text: str, start: int, end: int, max_chars: int) -> Iterator[Atom]:
    """Atoms of [start, end): whole paragraphs, fences and tables, or their parts."""
    for block in split_blocks(text, start, end):
        yield from block_atoms(text, block, max_chars)


# ------------------------------------------------------------------ recursive / fixed
def recursive_spans(text: str, config: NormalizeConfig, start: int = 0, end: int | None = None) -> list[Span]:
    """The ``recursive`` strategy over [start, end)."""
    stop = len(text) if end is None else end
    atoms = split_atoms(text, start, stop, list(config.split_hierarchy), config.max_chars)
    merged = merge_atoms(atoms, config.max_chars, config.overlap_chars)
    return _trimmed(text, (Span(s, e, hard_cut=h) for s, e, h in merged))


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
    return _trimmed(text, spans)


# ------------------------------------------------------------------ by_paragraph / by_sentence
def paragraph_spans(text: str, config: NormalizeConfig) -> list[Span]:
    """The ``by_paragraph`` strategy: one chunk per paragraph (blank-line separated; code
    fences and tables count as one paragraph). Paragraphs under ``min_chars`` join the next
    one; paragraphs over ``max_chars`` split at lines, sentences, then words, and the pieces
    are packed into parts of up to ``max_chars`` (not one chunk per line or word)."""

    def atoms() -> Iterator[Atom]:
        for block in split_blocks(text, 0, len(text)):
            if block.kind == "text" and block.end - block.start > config.max_chars:
                pieces = _plain_atoms(text, block.start, block.end, _PARAGRAPH_SEPS, config.max_chars)
                yield from pack(pieces, config.max_chars, 0)
            else:
                yield from block_atoms(text, block, config.max_chars)

    return _trimmed(text, _spans(pack_small(atoms(), config.min_chars, config.max_chars)))


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
                yield from _plain_atoms(text, s, e, _SENTENCE_SEPS, config.max_chars)

    return _trimmed(text, _spans(pack(atoms(), config.max_chars, config.overlap_chars)))


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
        return _trimmed(text, _spans([Atom(unit.start, unit.end)], **fields))
    atoms = structured_atoms(text, unit.start, unit.end, config.max_chars)
    parts = _trimmed(text, _spans(pack(atoms, config.max_chars, 0), **fields))
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
