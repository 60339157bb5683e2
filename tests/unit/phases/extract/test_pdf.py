"""PDF extraction on the real corpora PDFs: modes, page ranges, reading order, error codes."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, ExtractOptions, extract_bytes
from indexfoundry.phases.extract.pdf import PAGE_SEPARATOR


def _extract(path: Path, options: ExtractOptions | None = None, **extract: Any) -> ExtractedText:
    config = PipelineConfig.model_validate(
        {"connect": {"sources": [{"type": "folder", "path": "."}]}, "extract": {"ocr_fallback": False, **extract}}
    )
    data = path.read_bytes()
    raw = RawRecord(
        uri=path.name,
        sha256="0" * 64,
        size_bytes=len(data),
        content_type="application/pdf",
        ext="pdf",
        path=f"raw/{path.name}",
        source_kind="folder",
        source_name="pdf",
    )
    items = extract_bytes(data, raw, config, options)
    assert len(items) == 1
    return items[0]


def _code(path: Path, options: ExtractOptions | None = None, **extract: Any) -> str:
    with pytest.raises(IndexFoundryError) as caught:
        _extract(path, options, **extract)
    return caught.value.code


def _letters(text: str) -> str:
    """Lowercase ASCII letters and digits only: robust to ligatures, accents and unmapped glyphs."""
    text = re.sub(r"\(cid:\d+\)", "", text)
    return "".join(
        re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower())
    )


def _interleaved_lines(item: ExtractedText, pdf: Path) -> list[str]:
    """Output lines that are not a contiguous run of the page's text in content order.

    pdfium gives each page's text in content-stream order (a column at a time in these papers),
    so a line that glues a left-column line to the right-column line beside it is not found.
    """
    document = pdfium.PdfDocument(pdf.read_bytes())
    bad: list[str] = []
    try:
        for page in item.pages or []:
            pdf_page = document[page.page - 1]
            full = _letters(pdf_page.get_textpage().get_text_range())
            for line in page.text.splitlines():
                letters = _letters(line)
                if len(line.split()) >= 6 and len(letters) >= 20 and letters not in full:
                    bad.append(f"p{page.page}: {line}")
    finally:
        document.close()
    return bad


@pytest.mark.parametrize("name", ["naacl06-shinyama.pdf", "multi-column.pdf"])
def test_layout_mode_reads_two_column_papers_without_interleaving_the_columns(corpora: Path, name: str):
    pdf = corpora / "pdf" / "multicolumn" / name
    item = _extract(pdf, ExtractOptions(page_range=(1, 4)))
    lines = [line for p in item.pages or [] for line in p.text.splitlines() if len(line.split()) >= 6]
    assert len(lines) > 100
    assert _interleaved_lines(item, pdf) == []


def test_the_interleaving_check_catches_lines_that_mix_the_two_columns(corpora: Path):
    pdf = corpora / "pdf" / "multicolumn" / "naacl06-shinyama.pdf"
    item = _extract(pdf, ExtractOptions(page_range=(2, 2)))
    document = pdfium.PdfDocument(pdf.read_bytes())
    page = document[1]
    width, height = page.get_size()
    text = page.get_textpage()
    left = [line for line in text.get_text_bounded(0, 0, width / 2, height).splitlines() if len(line.split()) >= 4]
    right = [line for line in text.get_text_bounded(width / 2, 0, width, height).splitlines() if len(line.split()) >= 4]
    document.close()
    mixed = "\n".join(f"{a} {b}" for a, b in zip(left[:20], right[:20], strict=False))
    assert item.pages is not None
    fake = ExtractedText(text=mixed, format="pdf", pages=[item.pages[0].model_copy(update={"text": mixed})])
    assert len(_interleaved_lines(fake, pdf)) >= 15


def test_layout_analysis_gives_the_same_text_every_time(corpora: Path):
    # pdfminer breaks distance ties by memory address; kampo.pdf (vertical CJK) has such ties.
    pdf = corpora / "pdf" / "cjk" / "kampo.pdf"
    texts = {_extract(pdf).text for _ in range(5)}
    assert len(texts) == 1


def test_pages_jsonl_lines_match_the_full_text_and_the_page_range(corpora: Path):
    item = _extract(corpora / "pdf" / "multicolumn" / "naacl06-shinyama.pdf", ExtractOptions(page_range=(2, 3)))
    assert item.pages is not None
    assert [p.page for p in item.pages] == [2, 3]
    assert item.text == PAGE_SEPARATOR.join(p.text for p in item.pages)
    for page in item.pages:
        assert page.char_count == len(page.text)
        assert not page.is_empty
        assert not page.ocr_used
        assert page.confidence is None
    assert item.metadata["page_count"] == 8
    assert item.stats["pages_processed"] == 2


def test_plain_mode_extracts_the_same_words_as_layout_mode(corpora: Path):
    pdf = corpora / "pdf" / "multicolumn" / "naacl06-shinyama.pdf"
    layout = _extract(pdf, ExtractOptions(page_range=(1, 1)))
    plain = _extract(pdf, ExtractOptions(page_range=(1, 1)), pdf_mode="plain")
    assert plain.metadata["mode"] == "plain"
    assert sorted(layout.text.split()) == sorted(plain.text.split())


def test_ligatures_are_split_into_letters(corpora: Path):
    item = _extract(corpora / "pdf" / "multicolumn" / "naacl06-shinyama.pdf", ExtractOptions(page_range=(2, 2)))
    assert "\ufb01" not in item.text
    assert "finding" in item.text


@pytest.mark.parametrize(
    ("relative", "code"),
    [
        ("edge/invalid.pdf", "PARSE_ERROR"),
        ("edge/password.pdf", "PARSE_ERROR"),
        ("edge/trivial.pdf", "EMPTY_CONTENT"),
        ("edge/encryption/aes-128.pdf", "PARSE_ERROR"),
        ("edge/encryption/aes-128-m.pdf", "PARSE_ERROR"),
        ("edge/encryption/aes-256.pdf", "PARSE_ERROR"),
        ("edge/encryption/aes-256-m.pdf", "PARSE_ERROR"),
        ("edge/encryption/aes-256-r6.pdf", "PARSE_ERROR"),
        ("edge/encryption/rc4-40.pdf", "PARSE_ERROR"),
        ("edge/encryption/rc4-128.pdf", "PARSE_ERROR"),
        ("edge/encryption/encrypted_doc_no_id.pdf", "EMPTY_CONTENT"),
        ("scanned/linn.pdf", "EMPTY_CONTENT"),
        ("scanned/175.pdf", "EMPTY_CONTENT"),
    ],
)
def test_edge_pdfs_fail_with_the_right_code(corpora: Path, relative: str, code: str):
    assert _code(corpora / "pdf" / relative) == code


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("edge/simple1.pdf", "Hello"),
        ("edge/pagelabels.pdf", None),
        ("edge/encryption/base.pdf", None),
        ("edge/zen_of_python_corrupted.pdf", "Beautiful is better than ugly."),
    ],
)
def test_edge_pdfs_with_text_are_extracted(corpora: Path, relative: str, expected: str | None):
    item = _extract(corpora / "pdf" / relative)
    assert item.text.strip()
    if expected is not None:
        assert expected in item.text


def test_a_damaged_stream_is_extracted_with_a_warning(corpora: Path):
    item = _extract(corpora / "pdf" / "edge" / "zen_of_python_corrupted.pdf")
    assert any("corrupt" in w.lower() for w in item.warnings)


def test_encrypted_pdf_says_it_is_encrypted(corpora: Path):
    with pytest.raises(IndexFoundryError) as caught:
        _extract(corpora / "pdf" / "edge" / "encryption" / "rc4-128.pdf")
    assert caught.value.code == "PARSE_ERROR"
    assert caught.value.details["encrypted"] is True


@pytest.mark.parametrize("name", ["rc4-40.pdf", "rc4-128.pdf", "aes-128.pdf", "aes-256.pdf"])
def test_encrypted_pdf_opens_with_the_password_from_the_environment(corpora: Path, name: str):
    item = _extract(
        corpora / "pdf" / "edge" / "encryption" / name,
        ExtractOptions(pdf_password="baz"),
        pdf_password_env="PDF_PASSWORD",
    )
    assert item.metadata["encrypted"] is True
    assert item.text.strip()


def test_a_wrong_password_is_a_parse_error(corpora: Path):
    assert _code(corpora / "pdf" / "edge" / "encryption" / "aes-128.pdf", ExtractOptions(pdf_password="nope")) == (
        "PARSE_ERROR"
    )


def test_a_truncated_pdf_is_a_parse_error(corpora: Path, tmp_path: Path):
    data = (corpora / "pdf" / "multicolumn" / "naacl06-shinyama.pdf").read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(data[: len(data) // 2])
    assert _code(truncated) == "PARSE_ERROR"


def test_bytes_that_are_not_a_pdf_are_a_parse_error(tmp_path: Path):
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"this is not a pdf at all\n" * 10)
    assert _code(fake) == "PARSE_ERROR"


def test_a_page_range_outside_the_document_is_invalid(corpora: Path):
    assert _code(corpora / "pdf" / "edge" / "simple1.pdf", ExtractOptions(page_range=(5, 6))) == "CONFIG_INVALID"
