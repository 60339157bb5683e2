"""Content-free chunks: parts of a document that hold no words a reader could be answered by.

Docs trees end sections with markdown link-reference definitions (``[name]: ../guide.md#name``),
and carry navigation residue (a list or table of bare links), lone images, HTML comments and
rules. Chunked on their own (a long section's last part, a page's link block) such a chunk
matches a query by its link names and URLs alone — ``[custom_dir]: ../user-guide/…`` ranked
first for "how to add a custom theme" — and answers nothing. Its links still resolve for
the reader: the page text (``get_page``, expansion) is cut from the extracted document, not from
the chunks.

A chunk is content-free when, after removing every line of those kinds (and heading lines, which
a chunk's breadcrumb carries anyway), fewer than ``MIN_WORDS`` words remain and it holds no code
fence. Such chunks of markdown and HTML documents (``FORMATS``) are dropped at normalize, and
counted (``content_free_dropped`` in the normalize stats), except when every chunk of a
document is content-free: then the document keeps them, so that it can still be found. Other
formats keep every chunk: a csv or json record of two short fields is content, not residue.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

# Fewer words than this outside link definitions, link lists, images, comments and headings.
MIN_WORDS = 3
# Document formats whose chunks are checked (markdown, and HTML pages converted to markdown).
FORMATS = frozenset({"markdown", "html", "url"})
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)

_LINE_KINDS = re.compile(
    r"""^(?:
        \ {0,3}\[[^\]]+\]:\s*\S+(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?     # link reference definition
      | (?:!\[[^\]]*\](?:\([^)]*\)|\[[^\]]*\])\s*)+                     # lone image(s)
      | <img\b[^>]*>                                                   # an HTML image
      | (?:[-*+]|\d+[.)])\s+\[[^\]]+\](?:\([^)]*\)|\[[^\]]*\])?         # a list item that is one link
      | <!--.*?-->                                                     # an HTML comment
      | ([-*_])(?:\s*\1){2,}                                           # a rule
      | \#{1,6}(?:\s.*)?                                               # a heading line
    )\s*$""",
    re.VERBOSE,
)
_LINK_CELL = re.compile(r"^\s*(?:\[[^\]]+\](?:\([^)]*\)|\[[^\]]*\])?|:?-+:?)?\s*$")
_WORD = re.compile(r"[^\W\d_]{2,}")

T = TypeVar("T")


def _residue(line: str) -> bool:
    """True if ``line`` carries no prose: a link definition, image, link-only item, comment,
    rule, heading, or a table row whose every cell is empty, a link or a delimiter."""
    body = line.strip()
    if not body or _LINE_KINDS.match(body):
        return True
    if "|" in body:
        cells = body.strip("|").split("|")
        return all(_LINK_CELL.match(cell) for cell in cells)
    return False


def content_free(text: str) -> bool:
    """True if ``text`` has fewer than ``MIN_WORDS`` words outside residue lines and no code fence."""
    if _FENCE.search(text):
        return False
    words = 0
    for line in text.splitlines():
        if _residue(line):
            continue
        words += len(_WORD.findall(line))
        if words >= MIN_WORDS:
            return False
    return True


def drop_content_free(items: Sequence[T], text_of: Callable[[T], str]) -> tuple[list[T], int]:
    """``items`` (one document's chunks or spans) without the content-free ones, and how many were
    dropped; all are kept when every one is content-free."""
    kept = [item for item in items if not content_free(text_of(item))]
    if not kept:
        return list(items), 0
    return kept, len(items) - len(kept)
