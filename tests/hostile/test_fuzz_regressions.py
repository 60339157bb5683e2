"""Inputs the fuzz harness (bench/fuzz/harness.py) found, as regression tests.

Each input is rebuilt here in its smallest form (the fuzzed files were mutations of
third-party corpus files, which are never copied into the repository).
"""

from __future__ import annotations

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractOptions, extract_bytes

CONFIG = PipelineConfig.model_validate(
    {"connect": {"sources": [{"type": "folder", "path": "."}]}, "index": {"embedding_model": "hash"}}
)
TYPES = {
    "csv": "text/csv",
    "json": "application/json",
    "txt": "text/plain",
    "md": "text/markdown",
    "html": "text/html",
}


def _raw(ext: str) -> RawRecord:
    return RawRecord(
        uri=f"fuzz/input.{ext}",
        sha256="0" * 64,
        size_bytes=0,
        content_type=TYPES[ext],
        ext=ext,
        path=f"raw/x.{ext}",
        source_kind="folder",
        source_name="fuzz",
    )


# Found by `harness csv` (csv-48ff776ea93066b7) and `harness json` (json-70481995f2932857,
# json-95b7f7cdaf1acbf0): a byte-order mark followed by bytes that do not fit it (odd-length
# UTF-16, invalid UTF-8 after a UTF-8 BOM) raised UnicodeDecodeError out of decode_text.
ODD_UTF16 = {
    "utf-8 BOM, invalid utf-8": b"\xef\xbb\xbf" + b'{"a": "caf\xfb"}',
    "utf-16-be BOM, odd length": b"\xfe\xff" + "a,b\n1,2\n".encode("utf-16-be") + b"\n",
    "utf-16-le BOM, odd length": b"\xff\xfe" + "a,b\n1,2\n".encode("utf-16-le") + b"x",
}


@pytest.mark.parametrize("ext", sorted(TYPES))
@pytest.mark.parametrize("data", list(ODD_UTF16.values()), ids=list(ODD_UTF16))
def test_a_utf16_bom_before_bytes_that_do_not_fit_it_is_decoded_another_way_or_a_parse_error(ext: str, data: bytes):
    try:
        items = extract_bytes(data, _raw(ext), CONFIG, ExtractOptions())
    except IndexFoundryError as error:
        assert error.code in {"PARSE_ERROR", "EMPTY_CONTENT"}
    else:
        assert all(isinstance(item.text, str) for item in items)


# Found by `harness json` (json-98675925a2056073): thousands of nested '[' made json.loads raise
# RecursionError out of the extractor.
@pytest.mark.parametrize("data", [b"[" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000, b"[" * 900 + b"]" * 900])
def test_json_nested_too_deeply_is_a_parse_error_not_a_crash(data: bytes):
    try:
        items = extract_bytes(data, _raw("json"), CONFIG, ExtractOptions())
    except IndexFoundryError as error:
        assert error.code == "PARSE_ERROR"
    else:
        assert all(isinstance(item.text, str) for item in items)


# Found by `harness pdf` (pdf-81bcc166f2404076, a mutated corpus PDF that is not committed):
# pdfminer read a page with no text, then PDFium could not load that page and PdfiumError escaped
# while checking it for images. The page is now skipped for OCR with a warning. The PDFium page
# failure is reproduced on a real generated PDF by making PDFium's page loader fail.
def test_a_page_pdfium_cannot_load_is_skipped_with_a_warning(monkeypatch: pytest.MonkeyPatch):
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    pdf.new_page(200, 200)
    import io

    buffer = io.BytesIO()
    pdf.save(buffer)
    pdf.close()

    def broken(self: object, index: int) -> object:
        raise pdfium.PdfiumError("Failed to load page.")

    monkeypatch.setattr(pdfium.PdfDocument, "get_page", broken)
    raw = _raw("txt").model_copy(update={"content_type": "application/pdf", "ext": "pdf", "uri": "fuzz/input.pdf"})
    try:
        items = extract_bytes(buffer.getvalue(), raw, CONFIG, ExtractOptions())
    except IndexFoundryError as error:
        assert error.code in {"EMPTY_CONTENT", "PARSE_ERROR"}
    else:
        assert any("PDFium cannot load the page" in w for item in items for w in item.warnings)
