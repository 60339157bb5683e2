"""Word documents (.docx) to markdown with python-docx.

Body paragraphs and tables in document order. Paragraphs styled ``Heading N`` (or a style
based on one, or ``Title``) become markdown headings of level N (capped at 6); numbered and
bulleted paragraphs become list items indented by their level; tables become markdown
tables with the first row as header. Page headers and footers are left out unless
``extract.include_headers_footers`` is on.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from indexfoundry.errors import ParseError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\u00a0]+")


def _heading_level(style: Any) -> int | None:
    """Level of a heading style, following ``based_on`` for custom styles derived from one."""
    seen = 0
    while style is not None and seen < 10:
        name = (getattr(style, "name", None) or "").strip()
        if name.lower() == "title":
            return 1
        match = _HEADING_STYLE.fullmatch(name)
        if match:
            return min(max(int(match.group(1)), 1), 6)
        style = getattr(style, "base_style", None)
        seen += 1
    return None


class _Numbering:
    """Looks up whether a list (numId, level) is bulleted or numbered in the numbering part."""

    def __init__(self, document: Any) -> None:
        self._formats: dict[tuple[str, int], str] = {}
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError, AttributeError):
            root = None
        if root is None:
            return
        abstract: dict[str, dict[int, str]] = {}
        for node in root.findall(_w("abstractNum")):
            levels: dict[int, str] = {}
            for lvl in node.findall(_w("lvl")):
                fmt = lvl.find(_w("numFmt"))
                levels[int(lvl.get(_w("ilvl"), "0"))] = str(fmt.get(_w("val"))) if fmt is not None else "decimal"
            abstract[str(node.get(_w("abstractNumId")))] = levels
        for num in root.findall(_w("num")):
            ref = num.find(_w("abstractNumId"))
            if ref is not None:
                for level, fmt in abstract.get(str(ref.get(_w("val"))), {}).items():
                    self._formats[(str(num.get(_w("numId"))), level)] = fmt

    def is_bullet(self, num_id: str, level: int) -> bool:
        return self._formats.get((num_id, level), "bullet") in ("bullet", "none")


def _w(name: str) -> str:
    return "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}" + name


class _Styles:
    """Paragraph styles by id, looked up once (python-docx resolves ``paragraph.style`` slowly)."""

    def __init__(self, document: Any) -> None:
        self._document = document
        self._cache: dict[str | None, Any] = {}

    def style(self, paragraph: Any) -> Any:
        style_id = paragraph._p.style
        if style_id not in self._cache:
            self._cache[style_id] = paragraph.style
        return self._cache[style_id]


def _list_info(paragraph: Any, style: Any) -> tuple[str, int] | None:
    """(numId, level) when the paragraph (or its style) is numbered."""
    for ppr in (paragraph._p.pPr, getattr(style.element, "pPr", None) if style is not None else None):
        if ppr is None:
            continue
        num_pr = ppr.find(_w("numPr"))
        if num_pr is None:
            continue
        num_id = num_pr.find(_w("numId"))
        ilvl = num_pr.find(_w("ilvl"))
        if num_id is None or num_id.get(_w("val")) in (None, "0"):
            return None
        level = int(ilvl.get(_w("val"), "0")) if ilvl is not None else 0
        return str(num_id.get(_w("val"))), level
    return None


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text.replace("\n", " ").replace("\r", " ")).strip()


def _cell_text(cell: Any) -> str:
    parts = [_clean(p.text) for p in cell.paragraphs]
    for table in cell.tables:
        parts.extend(_clean(" ".join(c.text for c in row.cells)) for row in table.rows)
    return " ".join(p for p in parts if p).replace("|", "\\|")


def _table_markdown(table: Any) -> str:
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if previous is not None and cell._tc is previous:
                continue  # a horizontally merged cell is repeated by python-docx
            previous = cell._tc
            cells.append(_cell_text(cell))
        if any(cells):
            rows.append(cells)
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join([" --- "] * width) + "|"]
    lines.extend("| " + " | ".join(r) + " |" for r in rows[1:])
    return "\n".join(lines)


def _paragraph_block(
    paragraph: Any,
    style: Any,
    info: tuple[str, int] | None,
    numbering: _Numbering,
    counters: dict[tuple[str, int], int],
) -> str:
    text = _clean(paragraph.text)
    if not text:
        return ""
    level = _heading_level(style) if style is not None else None
    if level is not None:
        return f"{'#' * level} {text}"
    if text.startswith("#"):
        text = "\\" + text  # a literal '#', not a heading
    if info is not None:
        num_id, depth = info
        indent = "  " * depth
        if numbering.is_bullet(num_id, depth):
            return f"{indent}- {text}"
        counters[info] = counters.get(info, 0) + 1
        return f"{indent}{counters[info]}. {text}"
    name = (style.name or "").lower() if style is not None else ""
    if name.startswith("list bullet"):
        return f"- {text}"
    if name.startswith("list number"):
        return f"1. {text}"
    return text


def _headers_footers(document: Any) -> tuple[list[str], list[str]]:
    headers: list[str] = []
    footers: list[str] = []
    for section in document.sections:
        for part, out in ((section.header, headers), (section.footer, footers)):
            if part.is_linked_to_previous:
                continue
            text = "\n".join(t for t in (_clean(p.text) for p in part.paragraphs) if t)
            if text and text not in out:
                out.append(text)
    return headers, footers


def extract_docx(data: bytes, raw: RawRecord, config: PipelineConfig) -> ExtractedText:
    """A .docx file as markdown: headings with levels, lists, tables; core properties as metadata."""
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ParseError(
            f"{raw.uri} is not a readable .docx file: {type(exc).__name__}: {exc}",
            suggestion="Check the file; old binary .doc files must be converted to .docx",
            details={"uri": raw.uri},
        ) from None
    except MemoryError:
        raise  # a zip bomb: the worker reports it as over extract.memory_mb
    except Exception as exc:  # lxml/python-docx raise assorted errors on damaged packages
        raise ParseError(
            f"{raw.uri} is a damaged .docx file: {type(exc).__name__}: {exc}",
            suggestion="Open and re-save it in a word processor",
            details={"uri": raw.uri},
        ) from None
    numbering = _Numbering(document)
    styles = _Styles(document)
    counters: dict[tuple[str, int], int] = {}
    blocks: list[str] = []
    previous_list = False
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            style = styles.style(item)
            info = _list_info(item, style)
            block = _paragraph_block(item, style, info, numbering, counters)
            if not block:
                continue
            is_list = info is not None
            if is_list and previous_list:
                blocks[-1] += "\n" + block  # consecutive items form one list
            else:
                blocks.append(block)
            previous_list = is_list
        elif isinstance(item, Table):
            table = _table_markdown(item)
            if table:
                blocks.append(table)
            previous_list = False
    if config.extract.include_headers_footers:
        headers, footers = _headers_footers(document)
        blocks = headers + blocks + footers
    text = "\n\n".join(blocks)
    props = document.core_properties
    metadata: dict[str, Any] = {}
    for name in ("title", "author", "subject", "keywords", "language"):
        value = getattr(props, name, None)
        if isinstance(value, str) and value.strip():
            metadata[name] = value.strip()
    title = metadata.get("title")
    if title is None:
        first = next((b for b in blocks if b.startswith("# ")), None)
        title = first[2:].strip() if first else None
    return ExtractedText(text=text, format="docx", title=title, headings=None, metadata=metadata)
