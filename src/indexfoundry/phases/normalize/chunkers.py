"""Chunking strategies. Every chunker returns spans (character offsets into the document's
extracted text) so that each chunk's text is exactly a slice of that text and its id can be
derived from its position.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from indexfoundry.errors import ChunkError
from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import Heading, PageExtraction


@dataclass(frozen=True)
class Span:
    """A chunk before it becomes a ``DocumentChunk``: [start, end) in characters."""

    start: int
    end: int
    hard_cut: bool = False
    section: str | None = None
    heading_path: str | None = None
    heading_level: int | None = None
    part: str | None = None
    page: int | None = None


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    level: int  # 0 for text before the first heading
    title: str | None
    path: str | None


# ------------------------------------------------------------------ recursive splitting
def split_atoms(text: str, start: int, end: int, seps: list[str], max_chars: int) -> list[tuple[int, int, bool]]:
    """Split [start, end) into contiguous pieces of at most ``max_chars``.

    Tries each separator in turn (the separator stays at the end of the piece before it);
    a piece with no separator left is hard-cut at ``max_chars`` (flagged True).
    """
    if end - start <= max_chars:
        return [(start, end, False)]
    for i, sep in enumerate(seps):
        if not sep or text.find(sep, start, end) == -1:
            continue
        out: list[tuple[int, int, bool]] = []
        pos = start
        while pos < end:
            idx = text.find(sep, pos, end)
            piece_end = end if idx == -1 else min(idx + len(sep), end)
            if piece_end - pos <= max_chars:
                out.append((pos, piece_end, False))
            else:
                out.extend(split_atoms(text, pos, piece_end, seps[i + 1 :], max_chars))
            pos = piece_end
        return out
    return [(s, min(s + max_chars, end), True) for s in range(start, end, max_chars)]


def merge_atoms(atoms: list[tuple[int, int, bool]], max_chars: int, overlap: int) -> list[tuple[int, int, bool]]:
    """Greedily pack contiguous atoms into chunks of at most ``max_chars``, with overlap.

    The next chunk starts at the trailing atoms of the previous one that fit in
    ``overlap`` characters (never repeating a whole chunk, always making progress).
    """
    chunks: list[tuple[int, int, bool]] = []
    i, n = 0, len(atoms)
    while i < n:
        start, end, hard = atoms[i]
        j = i
        while j + 1 < n and atoms[j + 1][1] - start <= max_chars:
            j += 1
            end = atoms[j][1]
            hard = hard or atoms[j][2]
        chunks.append((start, end, hard))
        if j + 1 >= n:
            break
        k = j + 1
        while k - 1 > i and end - atoms[k - 1][0] <= overlap and atoms[j + 1][1] - atoms[k - 1][0] <= max_chars:
            k -= 1
        i = k
    return chunks


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) so it neither starts nor ends with whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _trimmed(text: str, spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for span in spans:
        s, e = trim(text, span.start, span.end)
        if e > s:
            out.append(replace(span, start=s, end=e))
    return out


def recursive_spans(text: str, config: NormalizeConfig, start: int = 0, end: int | None = None) -> list[Span]:
    """The ``recursive`` strategy over [start, end)."""
    stop = len(text) if end is None else end
    atoms = split_atoms(text, start, stop, list(config.split_hierarchy), config.max_chars)
    merged = merge_atoms(atoms, config.max_chars, config.overlap_chars)
    return _trimmed(text, [Span(s, e, hard_cut=h) for s, e, h in merged])


# ------------------------------------------------------------------ by_heading
def line_starts(text: str) -> list[int]:
    """Character offset of the start of every line."""
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def heading_sections(text: str, headings: list[Heading]) -> list[Section]:
    """Split a document into sections at its headings, each with its breadcrumb."""
    starts = line_starts(text)
    bounds: list[tuple[int, Heading]] = []
    for heading in headings:
        if 1 <= heading.line <= len(starts):
            bounds.append((starts[heading.line - 1], heading))
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


def _merge_short(sections: list[Section], config: NormalizeConfig) -> list[Section]:
    """Fold sections shorter than ``min_chars`` into their parent (or a heading-only parent
    into its first child), while the result stays within ``max_chars``."""
    units: list[Section] = []
    carry: int | None = None
    for index, section in enumerate(sections):
        start = carry if carry is not None else section.start
        carry = None
        own = section.end - section.start
        if own < config.min_chars:
            nxt = sections[index + 1] if index + 1 < len(sections) else None
            if nxt is not None and _is_ancestor(section, nxt) and nxt.end - start <= config.max_chars:
                carry = start
                continue
            prev = units[-1] if units else None
            if (
                prev is not None
                and prev.end == start
                and _is_ancestor(prev, section)
                and section.end - prev.start <= config.max_chars
            ):
                units[-1] = replace(prev, end=section.end)
                continue
        units.append(replace(section, start=start))
    return units


def _blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Paragraph blocks of [start, end): split at blank lines, but never inside a code fence."""
    blocks: list[tuple[int, int]] = []
    pos = start
    block_start = start
    fence: str | None = None
    while pos < end:
        nl = text.find("\n", pos, end)
        line_end = end if nl == -1 else nl + 1
        stripped = text[pos:line_end].strip()
        if fence is not None:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
        elif stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            run = len(stripped) - len(stripped.lstrip(marker[0]))
            fence = marker[0] * run
        elif not stripped and pos > block_start:
            blocks.append((block_start, line_end))
            block_start = line_end
        pos = line_end
    if block_start < end:
        blocks.append((block_start, end))
    return blocks


def _split_section(text: str, unit: Section, config: NormalizeConfig) -> list[Span]:
    """Split a section over ``max_chars`` at paragraph boundaries; code fences and tables stay
    whole when they fit. Every part keeps the breadcrumb and gets a part marker."""
    base = Span(unit.start, unit.end, section=unit.title, heading_path=unit.path, heading_level=unit.level or None)
    s, e = trim(text, unit.start, unit.end)
    if e - s <= config.max_chars:
        return _trimmed(text, [base])
    atoms: list[tuple[int, int, bool]] = []
    for b_start, b_end in _blocks(text, unit.start, unit.end):
        if b_end - b_start <= config.max_chars:
            atoms.append((b_start, b_end, False))
        else:
            atoms.extend(split_atoms(text, b_start, b_end, ["\n", ". ", " "], config.max_chars))
    parts = _trimmed(
        text,
        [replace(base, start=a, end=b, hard_cut=h) for a, b, h in merge_atoms(atoms, config.max_chars, 0)],
    )
    if len(parts) > 1:
        parts = [replace(p, part=f"{i}/{len(parts)}") for i, p in enumerate(parts, start=1)]
    return parts


def by_heading_spans(text: str, headings: list[Heading], config: NormalizeConfig) -> list[Span]:
    """The ``by_heading`` strategy: one chunk per section, with breadcrumbs."""
    sections = heading_sections(text, headings)
    if config.merge_short_sections:
        sections = _merge_short(sections, config)
    spans: list[Span] = []
    for unit in sections:
        spans.extend(_split_section(text, unit, config))
    return spans


def chunk_spans(
    text: str,
    headings: list[Heading],
    config: NormalizeConfig,
    pages: list[PageExtraction] | None = None,
) -> list[Span]:
    """Chunk one document with the configured strategy."""
    strategy = config.chunk_strategy
    if strategy == "recursive":
        return recursive_spans(text, config)
    if strategy == "by_heading":
        return by_heading_spans(text, headings, config)
    raise ChunkError(
        f"chunk strategy '{strategy}' is not available in this build",
        suggestion="Use 'recursive' or 'by_heading'",
    )
