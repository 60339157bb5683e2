"""Fenced code blocks in markdown text: which lines open and close one, and a chunk's text shown
with its fences whole.

Chunks are cut by size, so one may begin inside a long code block (its opener is in an earlier
chunk; normalize records it as ``ChunkPosition.fence``) or end inside one. Rendered as it is, such
text shows its code as paragraphs, and its closing line opens a bogus block that swallows
the rest. ``as_markdown`` re-opens and closes the fence, so the code renders as code. The same
rules decide fences in normalize (``phases/normalize/blocks.py``), so both read a text alike.
"""

from __future__ import annotations

import re

# A fence opener at any indentation: fences nested in lists and tabs are common in docs.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


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


def fence_after(text: str, fence: str | None = None) -> str | None:
    """The opener line of the fence still open at the end of ``text``, which begins inside
    ``fence`` (an opener line) or, when it is None, outside any fence."""
    open_line = fence.strip() if fence else None
    marker = fence_opener(open_line) if open_line else None
    for line in text.split("\n"):
        body = line.rstrip("\r")
        if marker is not None:
            if fence_closes(body, marker):
                open_line = marker = None
            continue
        marker = fence_opener(body)
        open_line = body.strip() if marker is not None else None
    return open_line


def as_markdown(text: str, fence: str | None = None) -> str:
    """``text`` (which begins inside ``fence`` when it is given) with that fence re-opened at its
    start and a fence still open at its end closed, for a markdown renderer."""
    shown = f"{fence.strip()}\n{text}" if fence else text
    still_open = fence_after(text, fence)
    if still_open is None:
        return shown
    marker = fence_opener(still_open) or "```"
    return f"{shown}\n{marker}"
