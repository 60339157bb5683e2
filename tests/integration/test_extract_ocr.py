"""OCR with the real tesseract: a two-column scan, and OCR mode on a born-digital page.

OCR is slow on shared cores: these tests read two single pages and nothing more.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pytest

from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, extract_bytes

pytestmark = [pytest.mark.corpora, pytest.mark.ocr]


def _extract(path: Path, **extract: Any) -> ExtractedText:
    config = PipelineConfig.model_validate(
        {"connect": {"sources": [{"type": "folder", "path": "."}]}, "extract": extract}
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
    return extract_bytes(data, raw, config)[0]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def test_a_two_column_scan_is_ocrd_automatically_and_matches_the_ground_truth(corpora: Path):
    scanned = corpora / "pdf" / "scanned"
    item = _extract(scanned / "linn.pdf")  # layout mode: the page has no text layer, so OCR falls in
    assert item.pages is not None and len(item.pages) == 1
    page = item.pages[0]
    assert page.ocr_used
    assert page.confidence is not None and 50 < page.confidence <= 100
    assert item.stats["pages_ocr_fallback"] == 1
    truth = (scanned / "linn.txt").read_text(encoding="utf-8")
    similarity = difflib.SequenceMatcher(None, _words(item.text), _words(truth), autojunk=False).ratio()
    assert similarity >= 0.95, similarity


def test_ocr_mode_reads_a_born_digital_page_through_tesseract(corpora: Path):
    item = _extract(corpora / "pdf" / "edge" / "simple1.pdf", pdf_mode="ocr")
    assert item.pages is not None
    assert all(p.ocr_used for p in item.pages)
    assert "hello" in item.text.lower()
    assert item.stats["pages_ocr"] == 1 and item.stats["pages_ocr_fallback"] == 0
