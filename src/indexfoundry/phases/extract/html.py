"""HTML: the page's main content as markdown (beautifulsoup4 + lxml, markdownify).

Boilerplate is removed before conversion: scripts, styles, forms, navigation, headers,
footers, asides, ARIA navigation/banner/contentinfo/search/complementary regions, Sphinx and
MkDocs permalink anchors, and the configured ``remove_selectors``. When the page marks its
main content (``<main>``, ``[role=main]``, a single ``<article>``) only that is kept.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Comment, Doctype, ProcessingInstruction, Tag
from markdownify import MarkdownConverter
from soupsieve import SelectorSyntaxError

from indexfoundry.errors import ConfigInvalid, ParseError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText
from indexfoundry.phases.extract.text import declared_charset, decode_text

# Never content.
_DROP_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "form",
    "button",
    "input",
    "select",
    "textarea",
    "nav",
    "footer",
    "aside",
    "link",
    "meta",
)
_DROP_SELECTORS = (
    '[role="navigation"]',
    '[role="banner"]',
    '[role="contentinfo"]',
    '[role="search"]',
    '[role="complementary"]',
    "[hidden]",
    '[aria-hidden="true"]',
    "a.headerlink",  # Sphinx / MkDocs permalink pilcrows inside headings
)
_MAIN_SELECTORS = ("main", '[role="main"]')
_BLANKS = re.compile(r"\n{3,}")
_TRAILING = re.compile(r"[ \t]+\n")


class _Converter(MarkdownConverter):
    """markdownify with the extract options: headings and tables kept or flattened, no images."""

    def __init__(self, *, headings: bool, tables: bool, **options: Any) -> None:
        super().__init__(**options)
        self._headings = headings
        self._tables = tables

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return ""

    def convert_hN(self, n: int, el: Tag, text: str, parent_tags: set[str]) -> str:
        if self._headings:
            return str(super().convert_hN(n, el, text, parent_tags))  # type: ignore[misc]
        return f"\n\n{' '.join(text.split())}\n\n"

    def convert_table(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if self._tables:
            return str(super().convert_table(el, text, parent_tags))  # type: ignore[misc]
        return f"\n\n{text.strip()}\n\n"

    def convert_tr(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if self._tables:
            return str(super().convert_tr(el, text, parent_tags))  # type: ignore[misc]
        return " ".join(text.replace("|", " ").split()) + "\n"


def _meta(soup: BeautifulSoup, *names: str) -> str | None:
    for name in names:
        tag = soup.find("meta", attrs={"name": name}) or soup.find("meta", attrs={"property": name})
        if isinstance(tag, Tag):
            content = tag.get("content")
            if isinstance(content, str) and content.strip():
                return " ".join(content.split())
    return None


def _main_root(body: Tag) -> Tag:
    for selector in _MAIN_SELECTORS:
        found = body.select_one(selector)
        if found is not None:
            return found
    articles = body.find_all("article")
    if len(articles) == 1 and isinstance(articles[0], Tag):
        return articles[0]
    return body


def _own(table: Tag, names: tuple[str, ...]) -> list[Tag]:
    """Elements of ``table`` itself, not of tables nested in it."""
    return [el for el in table.find_all(names) if isinstance(el, Tag) and el.find_parent("table") is table]


def _unwrap_layout_tables(root: Tag) -> None:
    """Tables used for page layout (holding other tables, or one cell per row) become plain blocks.

    Only data tables should turn into markdown tables; a layout table would otherwise squash
    the whole page into one table cell.
    """
    for table in root.find_all("table"):
        if not isinstance(table, Tag):
            continue
        rows = _own(table, ("tr",))
        widths = [len([c for c in row.find_all(["td", "th"]) if c.find_parent("tr") is row]) for row in rows]
        if table.find("table") is None and widths and max(widths) > 1:
            continue
        for element in _own(table, ("thead", "tbody", "tfoot", "tr", "td", "th", "caption")):
            element.name = "div"
        table.name = "div"


def _absolute_links(root: Tag, base: str | None) -> None:
    if not base:
        return
    for anchor in root.find_all("a", href=True):
        if isinstance(anchor, Tag):
            href = anchor.get("href")
            if isinstance(href, str):
                anchor["href"] = urljoin(base, href)


def _base_url(soup: BeautifulSoup, raw: RawRecord) -> str | None:
    page = raw.uri if "://" in raw.uri else None
    base = soup.find("base", href=True)
    if isinstance(base, Tag) and isinstance(base.get("href"), str):
        return urljoin(page or "", str(base["href"])) or page
    return page


def extract_html(data: bytes, raw: RawRecord, config: PipelineConfig) -> ExtractedText:
    """Main content of an HTML page as markdown, with its title and meta description."""
    cfg = config.extract
    text, encoding = decode_text(data, declared_charset(raw.content_type, raw.extract_options), uri=raw.uri, html=True)
    try:
        soup = BeautifulSoup(text, "lxml")
    except (ValueError, TypeError) as exc:
        raise ParseError(f"{raw.uri} cannot be parsed as HTML: {exc}", suggestion="Check the file") from None
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text(" ").split()) if isinstance(title_tag, Tag) else ""
    title = title or _meta(soup, "og:title") or ""
    description = _meta(soup, "description", "og:description")
    html_tag = soup.find("html")
    language = html_tag.get("lang") if isinstance(html_tag, Tag) else None
    base = _base_url(soup, raw)
    body = soup.body or soup
    for node in body.find_all(string=lambda s: isinstance(s, Comment | Doctype | ProcessingInstruction)):
        node.extract()
    for tag in body.find_all(_DROP_TAGS):
        if isinstance(tag, Tag):
            tag.decompose()
    try:
        selectors = [*_DROP_SELECTORS, *cfg.remove_selectors]
        for selector in selectors:
            for tag in body.select(selector):
                tag.decompose()
    except (ValueError, SelectorSyntaxError) as exc:
        raise ConfigInvalid(
            f"extract.remove_selectors has an invalid CSS selector: {exc}",
            suggestion="Fix the selector (CSS syntax as in document.querySelectorAll)",
        ) from None
    for header in body.find_all("header"):
        # A page banner goes; an article's own header (its title) stays (ARIA: banner scope).
        if isinstance(header, Tag) and header.find_parent(["article", "main", "section"]) is None:
            header.decompose()
    root = _main_root(body) if isinstance(body, Tag) else body
    if isinstance(root, Tag):
        _unwrap_layout_tables(root)
    if cfg.preserve_links:
        _absolute_links(root, base)
    converter = _Converter(
        headings=cfg.preserve_headings,
        tables=cfg.preserve_tables,
        heading_style="ATX",
        bullets="-",
        strip=[] if cfg.preserve_links else ["a"],
        escape_asterisks=False,
        escape_underscores=False,
        escape_misc=False,
        table_infer_header=True,
        autolinks=False,
    )
    markdown = converter.convert_soup(root)
    markdown = _BLANKS.sub("\n\n", _TRAILING.sub("\n", markdown.replace("\xa0", " "))).strip()
    metadata: dict[str, Any] = {"encoding": encoding}
    if description:
        metadata["description"] = description
    if isinstance(language, str) and language.strip():
        metadata["language"] = language.strip()
    if title:
        metadata["title"] = title
    return ExtractedText(
        text=markdown,
        format="html",
        title=title or None,
        headings=None if cfg.preserve_headings else [],
        metadata=metadata,
    )
