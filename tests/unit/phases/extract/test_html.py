"""HTML extraction: main content only, markdown structure, charsets, on the real corpora pages."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, extract_bytes
from indexfoundry.phases.extract.markdown import find_headings

SITE = Path("html") / "mkdocs-1.4.2-site"
SOURCE = Path("markdown") / "mkdocs-1.4.2" / "docs"


def _extract(data: bytes, content_type: str, uri: str = "page.html", **extract: Any) -> ExtractedText:
    config = PipelineConfig.model_validate(
        {"connect": {"sources": [{"type": "folder", "path": "."}]}, "extract": extract}
    )
    raw = RawRecord(
        uri=uri,
        sha256="0" * 64,
        size_bytes=len(data),
        content_type=content_type,
        ext="html",
        path="raw/x.html",
        source_kind="folder",
        source_name="site",
    )
    return extract_bytes(data, raw, config)[0]


def _tokens(text: str) -> Counter[str]:
    text = re.sub(r"</?[a-zA-Z][^>]*>", " ", text)  # raw HTML blocks inside the markdown source
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"^\s*\[[^\]]+\]:\s*\S+.*$", "", text, flags=re.M)  # link reference definitions
    return Counter(re.findall(r"[a-z0-9]+", text.lower()))


def _page_pairs(corpora: Path) -> list[tuple[Path, Path]]:
    """(markdown source, built HTML) of every mkdocs page whose source is its content.

    Pages made by plugin directives (``::: module.Class`` for mkdocstrings / mkdocs-click)
    are left out: their HTML is generated code documentation, not the markdown.
    """
    pairs = []
    for source in sorted((corpora / SOURCE).rglob("*.md")):
        if re.search(r"^::: ", source.read_text(encoding="utf-8"), flags=re.M):
            continue
        rel = source.relative_to(corpora / SOURCE)
        stem = str(rel.with_suffix("")).replace("README", "index")
        html = corpora / SITE / f"{stem}.html"
        if not html.is_file():
            html = corpora / SITE / rel.with_suffix("") / "index.html"
        pairs.append((source, html))
    return pairs


@pytest.mark.corpora
def test_mkdocs_pages_extract_to_the_text_of_their_markdown_source(corpora: Path):
    pairs = _page_pairs(corpora)
    assert len(pairs) >= 14
    for source, html in pairs:
        md = _tokens(_extract(source.read_bytes(), "text/markdown", uri=str(source)).text)
        out = _tokens(_extract(html.read_bytes(), "text/html", uri=str(html)).text)
        shared = sum((md & out).values())
        recall, precision = shared / sum(md.values()), shared / sum(out.values())
        assert recall >= 0.9 and precision >= 0.9, (source.name, recall, precision)


@pytest.mark.corpora
def test_mkdocs_pages_lose_their_navigation_and_footer(corpora: Path):
    for source, html in _page_pairs(corpora):
        data = html.read_bytes()
        soup = BeautifulSoup(data, "lxml")
        chrome = soup.select("nav, footer, [role=navigation], .navbar, .bs-sidebar")
        assert chrome, html
        source_text = source.read_text(encoding="utf-8")
        boilerplate = {
            " ".join(a.get_text(" ").split()) for element in chrome for a in element.find_all(["a", "p", "li"])
        }
        boilerplate = {b for b in boilerplate if len(b) >= 12 and b not in source_text}
        text = _extract(data, "text/html").text
        leaked = sorted(b for b in boilerplate if b in text)
        assert leaked == [], (html.name, leaked[:5])
        assert "Documentation built with" not in text


@pytest.mark.corpora
def test_headings_become_markdown_headings_without_permalink_marks(corpora: Path):
    item = _extract((corpora / SITE / "user-guide" / "installation.html").read_bytes(), "text/html")
    headings = [(h.level, h.text) for h in find_headings(item.text)]
    assert (1, "MkDocs Installation") in headings
    assert (2, "Requirements") in headings
    assert (3, "Installing Python") in headings
    assert "¶" not in item.text
    assert item.headings == find_headings(item.text)  # found in the worker, from the markdown


@pytest.mark.corpora
def test_title_and_meta_description_are_captured(corpora: Path):
    item = _extract((corpora / SITE / "index.html").read_bytes(), "text/html")
    assert item.title == "MkDocs"
    assert item.metadata["description"] == "Project documentation with Markdown."
    assert item.metadata["language"] == "en"


@pytest.mark.corpora
def test_a_cp1252_page_without_a_declared_charset_is_decoded_right(corpora: Path):
    item = _extract((corpora / "html" / "pages" / "fake-html-cp1252.html").read_bytes(), "text/html")
    assert item.metadata["encoding"] == "cp1252"
    assert "El niño comió paella" in item.text
    assert "25,75 €" in item.text


@pytest.mark.corpora
def test_a_utf16_page_is_decoded_and_its_tables_become_markdown(corpora: Path):
    pages = corpora / "html" / "pages"
    utf16 = _extract((pages / "example-steelJIS-datasheet-utf-16.html").read_bytes(), "text/html")
    utf8 = _extract((pages / "example-steelJIS-datasheet.html").read_bytes(), "text/html")
    assert utf16.metadata["encoding"].startswith("utf-16")
    assert utf16.text == utf8.text
    assert "| C | Si | Mn | P | S | Cr | Mo |" in re.sub(" +", " ", utf16.text.replace("**", ""))
    assert re.search(r"^\| --- \|", utf16.text, flags=re.M)


def test_main_content_is_preferred_and_chrome_is_dropped():
    html = b"""<!doctype html><html><head><title>T</title><style>p{}</style></head><body>
    <header><a href="/">Site banner</a></header>
    <nav><a href="/a">Menu entry</a></nav>
    <div class="ad">Buy now</div>
    <main><article><header><h1>Article title</h1></header><p>The body text.</p>
    <form><input value="x"><button>Subscribe</button></form>
    <script>var tracking = 1;</script></article></main>
    <aside>Related links</aside><footer>Copyright footer</footer></body></html>"""
    text = _extract(html, "text/html", remove_selectors=[".ad"]).text
    assert text == "# Article title\n\nThe body text."


def test_links_are_kept_and_resolved_against_the_page_url_when_asked():
    html = (
        b'<html><body><main><p>See <a href="../guide/">the guide</a> and <a href="#x">this</a>.</p>'
        b"</main></body></html>"
    )
    plain = _extract(html, "text/html", uri="https://example.org/docs/page/")
    assert plain.text == "See the guide and this."
    linked = _extract(html, "text/html", uri="https://example.org/docs/page/", preserve_links=True)
    assert "[the guide](https://example.org/docs/guide/)" in linked.text
    assert "[this](https://example.org/docs/page/#x)" in linked.text


def test_tables_and_headings_can_be_flattened():
    html = (
        b"<html><body><h2>Prices</h2><table><tr><th>Item</th><th>Cost</th></tr>"
        b"<tr><td>Tea</td><td>2</td></tr></table></body></html>"
    )
    kept = _extract(html, "text/html").text
    assert "## Prices" in kept and "| Item | Cost |" in kept and "| Tea | 2 |" in kept
    flat = _extract(html, "text/html", preserve_headings=False, preserve_tables=False)
    assert flat.text == "Prices\n\nItem Cost\nTea 2"
    assert flat.headings == []


def test_the_charset_in_the_content_type_header_is_used():
    data = "<html><body><p>Größe</p></body></html>".encode("iso-8859-1")
    assert _extract(data, "text/html; charset=iso-8859-1").text == "Größe"


def test_meta_charset_is_honoured():
    data = '<html><head><meta charset="windows-1251"></head><body><p>Привет</p></body></html>'.encode("cp1251")
    item = _extract(data, "text/html")
    assert item.text == "Привет"
    assert item.metadata["encoding"] == "cp1251"


def test_an_invalid_remove_selector_is_config_invalid():
    with pytest.raises(IndexFoundryError) as caught:
        _extract(b"<html><body><p>x</p></body></html>", "text/html", remove_selectors=["div[["])
    assert caught.value.code == "CONFIG_INVALID"
