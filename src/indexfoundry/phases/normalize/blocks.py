"""Markdown-aware blocks of a text: paragraphs, code fences and tables, with exact offsets.

Chunkers that respect structure (``by_heading``, ``by_paragraph``, ``by_sentence``) work on
these blocks so that a code fence or a table is never cut in the middle when it fits, and a
blank line inside a fence is never taken for a paragraph break.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from indexfoundry.models.fences import fence_closes, fence_opener

# A GFM table delimiter row: dashes, colons and pipes only, with at least one dash.
_TABLE_DELIM = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")

# One or more lines holding only ASCII whitespace (each is blank: it ends a paragraph).
_BLANK_LINES = re.compile(r"(?:[ \t\r\f\v]*+\n)++")  # possessive: no backtracking state per line

BlockKind = Literal["text", "fence", "table"]


@dataclass(frozen=True, slots=True)
class Block:
    """[start, end) in characters; ``head_end`` ends a fence's opener line or a table's
    delimiter row; ``closer_start`` starts a fence's closing line (None if unclosed)."""

    start: int
    end: int
    kind: BlockKind
    head_end: int | None = None
    closer_start: int | None = None


def _line_end(text: str, pos: int, end: int) -> int:
    """End of the line starting at ``pos`` (after its newline), within ``end``."""
    nl = text.find("\n", pos, end)
    return end if nl == -1 else nl + 1


def split_blocks(text: str, start: int, end: int) -> Iterator[Block]:
    """Blocks of [start, end) in order. Blank lines between blocks are left out.

    Lines are read one at a time from the text (no list of every line: a text of blank
    lines would otherwise cost ~100 bytes per character).
    """
    para: int | None = None
    para_end = start
    pos = start
    while pos < end:
        blanks = _BLANK_LINES.match(text, pos, end)
        if blanks is not None:  # fast path over a run of blank lines (one step, not one per line)
            if para is not None:
                yield Block(para, para_end, "text")
                para = None
            pos = blanks.end()
            continue
        ls, le = pos, _line_end(text, pos, end)
        body = text[ls:le].rstrip("\r\n")
        marker = fence_opener(body)
        if marker is not None:
            if para is not None:
                yield Block(para, para_end, "text")
                para = None
            closer: int | None = None
            block_end = le
            while block_end < end:
                line_end = _line_end(text, block_end, end)
                if fence_closes(text[block_end:line_end].rstrip("\r\n"), marker):
                    closer = block_end
                    block_end = line_end
                    break
                block_end = line_end
            yield Block(ls, block_end, "fence", head_end=le, closer_start=closer)
            pos = block_end
            continue
        if "|" in body and le < end:
            delim_end = _line_end(text, le, end)
            delim = text[le:delim_end].rstrip("\r\n")
            if "-" in delim and _TABLE_DELIM.match(delim) and ("|" in delim or body.strip().startswith("|")):
                if para is not None:
                    yield Block(para, para_end, "text")
                    para = None
                block_end = delim_end
                while block_end < end:
                    line_end = _line_end(text, block_end, end)
                    row = text[block_end:line_end]
                    if "|" not in row or not row.strip():
                        break
                    block_end = line_end
                yield Block(ls, block_end, "table", head_end=delim_end)
                pos = block_end
                continue
        if not body.strip():
            if para is not None:
                yield Block(para, para_end, "text")
                para = None
        else:
            if para is None:
                para = ls
            para_end = le
        pos = le
    if para is not None:
        yield Block(para, para_end, "text")


def fences_at(text: str, starts: list[int]) -> list[str | None]:
    """For each offset of ``starts``, the opener line (without its indentation) of the code
    fence whose body or closing line it falls in, else None.

    A chunk that begins inside a long fence shows code without the fence around it; a renderer
    given this opener re-opens the fence, so the code renders as code. One pass over the
    blocks of ``text`` (only when it holds a fence marker at all), whatever the order of ``starts``.
    """
    found: list[str | None] = [None] * len(starts)
    if "```" not in text and "~~~" not in text:
        return found
    order = sorted(range(len(starts)), key=starts.__getitem__)
    fences = (b for b in split_blocks(text, 0, len(text)) if b.kind == "fence")
    block = next(fences, None)
    for index in order:
        at = starts[index]
        while block is not None and block.end <= at:
            block = next(fences, None)
        if block is None:
            break
        assert block.head_end is not None
        if block.head_end <= at:
            found[index] = text[block.start : block.head_end].strip()
    return found
