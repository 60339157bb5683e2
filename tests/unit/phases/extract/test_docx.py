"""Word documents: heading levels, lists, tables, headers and footers, on the real corpora files."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from defusedxml import ElementTree

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, extract_bytes
from indexfoundry.phases.extract.markdown import find_headings
from tests.conftest import CORPORA

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _extract(path: Path, **extract: Any) -> ExtractedText:
    config = PipelineConfig.model_validate(
        {"connect": {"sources": [{"type": "folder", "path": "."}]}, "extract": extract}
    )
    data = path.read_bytes()
    raw = RawRecord(
        uri=path.name,
        sha256="0" * 64,
        size_bytes=len(data),
        content_type=DOCX,
        ext="docx",
        path="raw/x.docx",
        source_kind="folder",
        source_name="docs",
    )
    return extract_bytes(data, raw, config)[0]


def _heading_paragraphs(path: Path) -> list[tuple[int, str]]:
    """(level, text) of every paragraph styled 'Heading N', read straight from the package XML."""
    with zipfile.ZipFile(path) as package:
        styles = ElementTree.fromstring(package.read("word/styles.xml"))
        body = ElementTree.fromstring(package.read("word/document.xml"))
    names = {}
    for style in styles.iter(f"{W}style"):
        name = style.find(f"{W}name")
        if name is not None:
            names[style.get(f"{W}styleId")] = name.get(f"{W}val")
    out = []
    for paragraph in body.iter(f"{W}p"):
        props = paragraph.find(f"{W}pPr")
        style = props.find(f"{W}pStyle") if props is not None else None
        name = names.get(style.get(f"{W}val")) if style is not None else None
        match = re.fullmatch(r"heading (\d)", (name or "").lower())
        if not match:
            continue
        parts = [
            (node.text or "") if node.tag == f"{W}t" else " "
            for node in paragraph.iter()
            if node.tag in (f"{W}t", f"{W}tab", f"{W}br", f"{W}cr")
        ]
        text = " ".join("".join(parts).split())
        if text:
            out.append((int(match.group(1)), text))
    return out


@pytest.mark.corpora
def test_every_heading_styled_paragraph_of_the_handbook_is_a_markdown_heading_of_its_level(corpora: Path):
    path = corpora / "docx" / "unstructured" / "handbook-872p.docx"
    expected = _heading_paragraphs(path)
    assert len(expected) > 250
    assert {level for level, _ in expected} == {1, 2, 3}
    item = _extract(path)
    found = [(h.level, h.text) for h in find_headings(item.text)]
    assert found == expected


@pytest.mark.corpora
def test_tables_become_markdown_tables_with_a_header_row(corpora: Path):
    item = _extract(corpora / "docx" / "unstructured" / "docx-tables.docx")
    assert "| Header Col 1 | Header Col 2 |\n| --- | --- |\n| Lorem ipsum | A link example |" in item.text


@pytest.mark.corpora
def test_bulleted_and_numbered_paragraphs_become_nested_lists(corpora: Path):
    text = _extract(corpora / "docx" / "unstructured" / "example-list-items-multiple.docx").text
    assert "- This is simply dummy text of the printing and typesetting industry." in text
    assert "1. This is simply dummy text" in text
    assert "2. This is simply dummy text" in text
    assert "  1. The quick brown fox jumps over the lazy dog." in text


@pytest.mark.corpora
def test_headers_and_footers_are_left_out_unless_asked_for(corpora: Path):
    path = corpora / "docx" / "unstructured" / "docx-hdrftr.docx"
    plain = _extract(path)
    with_chrome = _extract(path, include_headers_footers=True)
    extra = set(with_chrome.text.splitlines()) - set(plain.text.splitlines())
    assert extra
    assert plain.text in with_chrome.text


@pytest.mark.corpora
def test_core_properties_give_the_title(corpora: Path):
    item = _extract(corpora / "docx" / "python-docx-1.2.0" / "doc-coreprops.docx")
    assert item.title
    assert item.metadata["title"] == item.title


@pytest.mark.corpora
@pytest.mark.parametrize("name", sorted(p.name for p in (CORPORA / "docx" / "python-docx-1.2.0").glob("*.docx")))
def test_every_python_docx_fixture_extracts_or_fails_with_a_code(corpora: Path, name: str):
    try:
        item = _extract(corpora / "docx" / "python-docx-1.2.0" / name)
    except IndexFoundryError as error:
        assert error.code in ("PARSE_ERROR", "EMPTY_CONTENT")
    else:
        assert isinstance(item.text, str)


def test_a_file_that_is_not_a_docx_is_a_parse_error(tmp_path: Path):
    fake = tmp_path / "fake.docx"
    fake.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(IndexFoundryError) as caught:
        _extract(fake)
    assert caught.value.code == "PARSE_ERROR"
