"""OCR of the real corpora's scanned PDF: a missing tesseract or OCR language is OCR_FAILED."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, ExtractOptions, extract_bytes


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


def test_missing_tesseract_is_ocr_failed_with_the_install_hint(corpora: Path, monkeypatch: pytest.MonkeyPatch):
    import pytesseract

    from indexfoundry.phases.extract import ocr

    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", "/nonexistent/tesseract")
    ocr.tesseract_version.cache_clear()
    try:
        with pytest.raises(IndexFoundryError) as caught:
            _extract(corpora / "pdf" / "scanned" / "linn.pdf", pdf_mode="ocr")
        assert caught.value.code == "OCR_FAILED"
        assert caught.value.suggestion is not None and "tesseract-ocr" in caught.value.suggestion
        # With automatic fallback, a scan that needs OCR fails the same way.
        with pytest.raises(IndexFoundryError) as fallback:
            _extract(corpora / "pdf" / "scanned" / "linn.pdf", ocr_fallback=True)
        assert fallback.value.code == "OCR_FAILED"
    finally:
        ocr.tesseract_version.cache_clear()


def test_a_missing_ocr_language_is_ocr_failed(corpora: Path):
    assert _code(corpora / "pdf" / "scanned" / "linn.pdf", pdf_mode="ocr", ocr_language="xyz") == "OCR_FAILED"
