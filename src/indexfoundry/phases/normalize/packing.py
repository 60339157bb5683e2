"""Atoms and how they become chunks: splitting text at separators, packing atoms into spans.

Every span is character offsets into the document's extracted text, so each chunk's text is a
slice of that text and its id can be derived from its position. The one exception is a table
or code fence too long for one chunk: its parts after the first repeat the table's header rows
(or re-open the fence) as a ``prefix``, and a cut fence is closed again with a ``suffix``; the
chunk text is then ``prefix + slice + suffix``.

Memory is bounded by design: atoms (the pieces between separators) are produced and packed
as streams, so a chunker holds the atoms of about one chunk at a time, never one object per
separator of the document; and a run of one separator (an indentation of 10,000 spaces, a
page of blank lines) is one atom, not one per character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cache

from indexfoundry.phases.normalize.blocks import Block, split_blocks

# Separators for splitting one oversized paragraph, coarse to fine.
PARAGRAPH_SEPS = ["\n", ". ", " "]


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


def trimmed(text: str, spans: Iterable[Span]) -> list[Span]:
    out: list[Span] = []
    for span in spans:
        s, e = trim(text, span.start, span.end, keep_indent=bool(span.prefix))
        if e > s:
            out.append(replace(span, start=s, end=e))
    return out


def spans_of(atoms: Iterable[Atom], **fields: object) -> Iterator[Span]:
    for a in atoms:
        yield Span(a.start, a.end, hard_cut=a.hard, prefix=a.prefix, suffix=a.suffix, **fields)  # type: ignore[arg-type]


# ------------------------------------------------------------------ structured blocks
def plain_atoms(text: str, start: int, end: int, seps: list[str], max_chars: int) -> Iterator[Atom]:
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
        return plain_atoms(text, block.start, block.end, PARAGRAPH_SEPS, max_chars)
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
        return plain_atoms(text, block.start, block.end, PARAGRAPH_SEPS, max_chars)
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
    return plain_atoms(text, block.start, block.end, PARAGRAPH_SEPS, max_chars)


def structured_atoms(text: str, start: int, end: int, max_chars: int) -> Iterator[Atom]:
    """Atoms of [start, end): whole paragraphs, fences and tables, or their parts."""
    for block in split_blocks(text, start, end):
        yield from block_atoms(text, block, max_chars)
