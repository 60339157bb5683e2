"""Markdown: front matter to metadata, headings located with mistune's AST.

mistune decides what is a heading (so a ``#`` line inside a code fence never is); each
AST heading is then matched, in order, to its line in the text so chunkers get exact
byte offsets and line numbers.
"""

from __future__ import annotations

import re
from typing import Any

import mistune
import yaml

from indexfoundry.models.records import Heading

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)

_parser = mistune.create_markdown(renderer=None, plugins=["table", "strikethrough", "footnotes"])


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split YAML front matter from the body; invalid front matter is kept as body text."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1) or "") or {}
    except yaml.YAMLError:
        return {}, text
    if not isinstance(data, dict):
        return {}, text
    clean = {str(k): _plain(v) for k, v in data.items()}
    return clean, text[match.end() :]


def _plain(value: Any) -> Any:
    """Front-matter values as JSON-safe plain data (dates become ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _inline_text(children: list[dict[str, Any]] | None) -> str:
    parts: list[str] = []
    for child in children or []:
        if "raw" in child and isinstance(child["raw"], str):
            parts.append(child["raw"])
        elif child.get("type") in ("linebreak", "softbreak"):
            parts.append(" ")
        else:
            parts.append(_inline_text(child.get("children")))
    return "".join(parts)


def _ast_headings(text: str) -> list[tuple[int, str]]:
    tokens = _parser(text)
    out: list[tuple[int, str]] = []

    def walk(nodes: Any) -> None:
        for node in nodes or []:
            if not isinstance(node, dict):
                continue
            if node.get("type") == "heading":
                title = " ".join(_inline_text(node.get("children")).split())
                out.append((int(node.get("attrs", {}).get("level", 1)), title))
            elif node.get("type") in ("block_quote", "list", "list_item"):
                continue  # headings nested in quotes/lists are not document structure
            else:
                walk(node.get("children"))

    walk(tokens if isinstance(tokens, list) else [])
    return out


def _norm(value: str) -> str:
    return _NON_WORD.sub("", value).lower()


def _candidate_lines(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, raw title) of every line that could be a heading, outside fences."""
    out: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        fence_match = _FENCE.match(body)
        if fence is not None:
            closes = fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence)
            if closes and not body.strip().strip(fence[0]):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        atx = _ATX.match(body)
        if atx:
            out.append((i, len(atx.group(1)), atx.group(2) or ""))
            continue
        if i + 1 < len(lines) and body.strip() and not body.startswith(("    ", "\t")):
            setext = _SETEXT.match(lines[i + 1].rstrip("\r\n"))
            if setext:
                out.append((i, 1 if setext.group(1)[0] == "=" else 2, body.strip()))
    return out


def find_headings(text: str) -> list[Heading]:
    """Headings of a markdown text with their byte offsets and 1-based line numbers."""
    lines = text.splitlines(keepends=True)
    candidates = _candidate_lines(lines)
    if not candidates:
        return []  # every AST heading is matched to a candidate line: none can be found
    ast = _ast_headings(text)
    if not ast:
        return []
    byte_starts: list[int] = []
    offset = 0
    for line in lines:
        byte_starts.append(offset)
        offset += len(line.encode("utf-8"))
    headings: list[Heading] = []
    cursor = 0
    for level, title in ast:
        wanted = _norm(title)
        match_at = None
        for j in range(cursor, len(candidates)):
            _, cand_level, raw = candidates[j]
            if cand_level == level and _norm(raw) == wanted:
                match_at = j
                break
        if match_at is None:
            # Inline markup the normaliser does not undo: take the next heading of that level.
            for j in range(cursor, len(candidates)):
                if candidates[j][1] == level:
                    match_at = j
                    break
        if match_at is None:
            continue
        line_index = candidates[match_at][0]
        headings.append(
            Heading(
                level=level,
                text=title or candidates[match_at][2].strip(),
                byte_start=byte_starts[line_index],
                line=line_index + 1,
            )
        )
        cursor = match_at + 1
    return headings


def extract_markdown(text: str) -> tuple[str, dict[str, Any], list[Heading], str | None]:
    """Body text, front matter, headings and title of a markdown document."""
    front, body = split_front_matter(text)
    headings = find_headings(body)
    title = front.get("title") if isinstance(front.get("title"), str) else None
    if title is None:
        first_h1 = next((h.text for h in headings if h.level == 1), None)
        title = first_h1
    return body, front, headings, title
