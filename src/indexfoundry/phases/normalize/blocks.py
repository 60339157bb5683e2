"""Markdown-aware blocks of a text: paragraphs, code fences and tables, with exact offsets.

Chunkers that respect structure (``by_heading``, ``by_paragraph``, ``by_sentence``) work on
these blocks so that a code fence or a table is never cut in the middle when it fits, and a
blank line inside a fence is never taken for a paragraph break.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# A fence opener at any indentation: fences nested in lists and tabs are common in docs.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
# A GFM table delimiter row: dashes, colons and pipes only, with at least one dash.
_TABLE_DELIM = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")

BlockKind = Literal["text", "fence", "table"]


@dataclass(frozen=True)
class Block:
    """[start, end) in characters; ``head_end`` ends a fence's opener line or a table's
    delimiter row; ``closer_start`` starts a fence's closing line (None if unclosed)."""

    start: int
    end: int
    kind: BlockKind
    head_end: int | None = None
    closer_start: int | None = None


def line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of every line of [start, end), newline included."""
    out: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        line_end = end if nl == -1 else nl + 1
        out.append((pos, line_end))
        pos = line_end
    return out


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


def split_blocks(text: str, start: int, end: int) -> list[Block]:
    """Blocks of [start, end) in order. Blank lines between blocks are left out."""
    lines = line_spans(text, start, end)
    blocks: list[Block] = []
    para: int | None = None
    para_end = start

    def flush() -> None:
        nonlocal para
        if para is not None:
            blocks.append(Block(para, para_end, "text"))
            para = None

    i, n = 0, len(lines)
    while i < n:
        ls, le = lines[i]
        body = text[ls:le].rstrip("\r\n")
        marker = fence_opener(body)
        if marker is not None:
            flush()
            closer: int | None = None
            j = i + 1
            while j < n:
                if fence_closes(text[lines[j][0] : lines[j][1]].rstrip("\r\n"), marker):
                    closer = j
                    break
                j += 1
            last = closer if closer is not None else n - 1
            blocks.append(
                Block(ls, lines[last][1], "fence", head_end=le, closer_start=lines[closer][0] if closer else None)
            )
            i = last + 1
            continue
        if "|" in body and i + 1 < n:
            delim = text[lines[i + 1][0] : lines[i + 1][1]].rstrip("\r\n")
            if "-" in delim and _TABLE_DELIM.match(delim) and ("|" in delim or body.strip().startswith("|")):
                flush()
                j = i + 2
                while j < n and "|" in text[lines[j][0] : lines[j][1]] and text[lines[j][0] : lines[j][1]].strip():
                    j += 1
                blocks.append(Block(ls, lines[j - 1][1], "table", head_end=lines[i + 1][1]))
                i = j
                continue
        if not body.strip():
            flush()
        else:
            if para is None:
                para = ls
            para_end = le
        i += 1
    flush()
    return blocks
