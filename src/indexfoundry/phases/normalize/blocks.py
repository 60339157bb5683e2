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

# A fence opener at any indentation: fences nested in lists and tabs are common in docs.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
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


def fence_closes(line: str, marker: str) -> bool:
    """True if ``line`` closes a fence opened with ``marker`` (same char, at least as long)."""
    match = _FENCE.match(line)
    if not match:
        return False
    run = match.group(1)
    return run[0] == marker[0] and len(run) >= len(marker) and not line.strip().strip(marker[0])


def fence_opener(line: str) -> str | None:
    """The fence marker (```` ``` ```` or ``~~~``…) a line opens, if it opens one."""
    match = _FENCE.match(line)
    if not match:
        return None
    marker = match.group(1)
    # A backtick fence's info string may not contain backticks (CommonMark).
    if marker[0] == "`" and "`" in line.strip()[len(marker) :]:
        return None
    return marker


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
