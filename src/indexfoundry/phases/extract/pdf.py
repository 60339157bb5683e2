"""PDF: text with pdfminer.six, OCR with tesseract for pages without a text layer.

Modes:
- ``layout``: pdfminer's full layout analysis; text boxes come out in reading order, so a
  two-column paper reads down the left column, then down the right one.
- ``plain``: lines grouped into boxes but ordered top to bottom only (faster, linear).
- ``ocr``: every page rendered by pypdfium2 at a fixed DPI and read by tesseract.

In the text modes a page with no text but with images is OCR'd when ``ocr_fallback`` is on.
pypdfium2 also gives the page count (pdfmium reads some damaged page trees pdfminer cannot)
and renders pages. The document text is the page texts joined by a blank line
(``"\\n\\n".join(page.text for page in pages)``), so page offsets can be recomputed exactly.
"""

from __future__ import annotations

import io
import logging
import re
import warnings as pywarnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from indexfoundry.errors import ConfigInvalid, EmptyContent, IndexFoundryError, OcrFailed, ParseError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import PageExtraction, RawRecord
from indexfoundry.phases.extract import ExtractedText, ExtractOptions

PAGE_SEPARATOR = "\n\n"
_CID = re.compile(r"\(cid:\d+\)")
_MANY_NEWLINES = re.compile(r"\n{3,}")


class _Collect(logging.Handler):
    """Collects pdfminer's warnings (damaged streams...) for the extraction report."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = " ".join(record.getMessage().split())[:200]
        if message not in self.messages and len(self.messages) < 20:
            self.messages.append(message)


@contextmanager
def _captured_warnings() -> Iterator[list[str]]:
    """pdfminer logs and warns about damaged files; keep those as document warnings."""
    handler = _Collect()
    logger = logging.getLogger("pdfminer")
    logger.addHandler(handler)
    previous = logger.propagate
    logger.propagate = False
    out: list[str] = []
    try:
        with pywarnings.catch_warnings(record=True) as caught:
            pywarnings.simplefilter("always")
            yield out
        for warning in caught:
            text = " ".join(str(warning.message).split())[:200]
            if text not in out:
                out.append(text)
    finally:
        logger.removeHandler(handler)
        logger.propagate = previous
        out.extend(m for m in handler.messages if m not in out)


def _laparams(mode: str) -> Any:
    from pdfminer.layout import LAParams

    if mode == "plain":
        return LAParams(boxes_flow=None)
    return LAParams()


# Typographic ligatures (ﬁ, ﬂ, ﬀ...) split into letters, so 'ﬁnd' is searchable as 'find'.
_LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"}
)


def _clean_page(text: str) -> str:
    text = text.translate(_LIGATURES)
    lines = [line.rstrip() for line in text.replace("\x00", "").replace("\f", "").splitlines()]
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


def _layout_text(layout: Any) -> str:
    """Text of a pdfminer page: text boxes in layout order, separated by blank lines."""
    from pdfminer.layout import LTTextBox, LTTextLine

    blocks: list[str] = []
    for element in layout:
        if isinstance(element, LTTextBox | LTTextLine):
            block = "\n".join(line.rstrip() for line in element.get_text().splitlines()).strip()
            if block:
                blocks.append(block)
    return "\n\n".join(blocks)


def _encrypted_error(uri: str, options: ExtractOptions, config: PipelineConfig) -> ParseError:
    env = config.extract.pdf_password_env
    if options.pdf_password:
        suggestion = f"The password in ${env} does not open it; set the right one" if env else "Check the password"
    else:
        suggestion = (
            f"Set the environment variable {env} to the PDF's password"
            if env
            else "Set extract.pdf_password_env to the name of an environment variable holding the password"
        )
    return ParseError(
        f"{uri} is encrypted and cannot be opened without its password",
        suggestion=suggestion,
        details={"uri": uri, "encrypted": True},
    )


def _damaged(uri: str, exc: BaseException) -> ParseError:
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    return ParseError(
        f"{uri} is not a readable PDF (damaged or truncated): {type(exc).__name__}: {reason}",
        suggestion="Check the file: re-download it or re-export it from its source application",
        details={"uri": uri, "exception": type(exc).__name__},
    )


def _open_pdfium(data: bytes, password: str | None) -> Any | None:
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data, password=password or None)
    except pdfium.PdfiumError:
        return None


def _pdfium_page(pdfium_doc: Any, number: int, warnings: list[str]) -> Any | None:
    """Page ``number`` for rendering, or None (with a warning) when PDFium cannot load it."""
    import pypdfium2 as pdfium

    try:
        return pdfium_doc[number - 1]
    except pdfium.PdfiumError:
        warnings.append(f"page {number}: PDFium cannot load the page; it was not checked for images or OCR'd")
        return None


def _miner_pages(
    data: bytes, uri: str, mode: str, wanted: set[int] | None, options: ExtractOptions, config: PipelineConfig
) -> tuple[dict[int, str], int, dict[str, Any]]:
    """pdfminer text per page (1-based) for the ``wanted`` pages, the page count it saw, doc info."""
    from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    try:
        parser = PDFParser(io.BytesIO(data))
        document = PDFDocument(parser, password=options.pdf_password or "")
    except (PDFPasswordIncorrect, PDFEncryptionError):
        raise _encrypted_error(uri, options, config) from None
    except Exception as exc:  # pdfminer raises many unrelated types on malformed input
        raise _damaged(uri, exc) from None
    info = _doc_info(document)
    info["encrypted"] = bool(document.encryption)
    manager = PDFResourceManager(caching=True)
    from indexfoundry.phases.extract.pdflayout import StablePageAggregator

    device = StablePageAggregator(manager, laparams=_laparams(mode))
    interpreter = PDFPageInterpreter(manager, device)
    texts: dict[int, str] = {}
    count = 0
    try:
        for number, page in enumerate(PDFPage.create_pages(document), start=1):
            count = number
            if wanted is not None and number not in wanted:
                continue
            interpreter.process_page(page)
            texts[number] = _clean_page(_layout_text(device.get_result()))
    except IndexFoundryError:
        raise
    except Exception as exc:  # damaged content streams, truncated files
        raise _damaged(uri, exc) from None
    return texts, count, info


def _doc_info(document: Any) -> dict[str, Any]:
    from pdfminer.pdftypes import resolve1
    from pdfminer.utils import decode_text

    out: dict[str, Any] = {}
    for entry in getattr(document, "info", None) or []:
        for key, name in (("Title", "title"), ("Author", "author")):
            value = resolve1(entry.get(key)) if isinstance(entry, dict) else None
            if isinstance(value, bytes):
                value = decode_text(value)
            if isinstance(value, str) and value.strip() and name not in out:
                out[name] = " ".join(value.split())
    return out


def _has_images(pdfium_page: Any) -> bool:
    import pypdfium2.raw as pdfium_c

    return any(True for _ in pdfium_page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]))


def _mostly_cid(text: str) -> bool:
    """pdfminer writes '(cid:N)' for glyphs it cannot map: such a page has no usable text layer."""
    if "(cid:" not in text:
        return False
    return len("".join(_CID.findall(text))) > 0.5 * len(text.replace(" ", ""))


def _page_numbers(total: int, page_range: tuple[int, int] | None, uri: str) -> list[int]:
    if page_range is None:
        return list(range(1, total + 1))
    start, end = page_range
    if start > end:
        raise ConfigInvalid(
            f"page_range start {start} is after end {end}",
            suggestion="Give start <= end (1-indexed, inclusive)",
        )
    if start > total:
        raise ConfigInvalid(
            f"{uri} has {total} pages; page_range starts at {start}",
            suggestion=f"Use pages 1..{total}",
        )
    return list(range(start, min(end, total) + 1))


def extract_pdf(data: bytes, raw: RawRecord, config: PipelineConfig, options: ExtractOptions) -> list[ExtractedText]:
    """Extract a PDF into per-page text (see the module docstring for the modes)."""
    with _captured_warnings() as warnings:
        item = _extract(data, raw, config, options, warnings)
    item.warnings[:0] = warnings
    return [item]


def _extract(
    data: bytes, raw: RawRecord, config: PipelineConfig, options: ExtractOptions, warnings: list[str]
) -> ExtractedText:
    cfg = config.extract
    mode = cfg.pdf_mode
    uri = raw.uri
    if not data.lstrip()[:1024].count(b"%PDF-"):
        raise ParseError(f"{uri} is not a PDF (no %PDF- header)", suggestion="Check the file type")
    pdfium_doc = _open_pdfium(data, options.pdf_password)
    try:
        info: dict[str, Any] = {}
        if mode == "ocr":
            if pdfium_doc is None:
                # Tell encrypted from damaged with pdfminer's verdict.
                _miner_pages(data, uri, "plain", set(), options, config)
                raise ParseError(f"{uri} cannot be rendered for OCR", suggestion="Check the file")
            total = len(pdfium_doc)
            numbers = _page_numbers(total, options.page_range, uri)
            miner: dict[int, str] = {}
        else:
            wanted = None
            if options.page_range is not None:
                wanted = set(range(options.page_range[0], options.page_range[1] + 1))
            miner, miner_count, info = _miner_pages(data, uri, mode, wanted, options, config)
            pdfium_count = len(pdfium_doc) if pdfium_doc is not None else 0
            if pdfium_doc is None:
                warnings.append("pypdfium2 could not open the file: no OCR fallback possible")
            elif pdfium_count != miner_count:
                warnings.append(f"pdfminer saw {miner_count} pages, pypdfium2 {pdfium_count}")
            total = max(miner_count, pdfium_count)
            numbers = _page_numbers(total, options.page_range, uri) if total else []
        pages, stats = _pages(numbers, miner, pdfium_doc, config, uri, warnings)
    finally:
        if pdfium_doc is not None:
            pdfium_doc.close()
    text = PAGE_SEPARATOR.join(p.text for p in pages)
    if not text.strip():
        _raise_empty(uri, mode, cfg.ocr_fallback, stats, len(numbers))
    stats["chars_extracted"] = len(text)
    stats["mode_used"] = mode
    metadata: dict[str, Any] = {"page_count": total, "mode": mode}
    metadata.update(info)
    if options.page_range is not None:
        metadata["page_range"] = [numbers[0], numbers[-1]] if numbers else []
    return ExtractedText(
        text=text,
        format="pdf",
        title=info.get("title"),
        headings=[],
        metadata=metadata,
        pages=pages,
        warnings=[],
        stats=stats,
    )


def _pages(
    numbers: list[int],
    miner: dict[int, str],
    pdfium_doc: Any | None,
    config: PipelineConfig,
    uri: str,
    warnings: list[str],
) -> tuple[list[PageExtraction], dict[str, Any]]:
    from indexfoundry.phases.extract.ocr import ocr_pdf_page, require_tesseract

    cfg = config.extract
    mode = cfg.pdf_mode
    pages: list[PageExtraction] = []
    stats: dict[str, Any] = {
        "pages_processed": 0,
        "pages_empty": 0,
        "pages_ocr": 0,
        "pages_ocr_fallback": 0,
        "pages_needing_ocr": 0,
    }
    ocr_ready: bool | None = None
    ocr_error: OcrFailed | None = None
    for number in numbers:
        text = miner.get(number, "")
        needs_ocr = mode == "ocr"
        usable = bool(text.strip()) and not _mostly_cid(text)
        if not needs_ocr and not usable and pdfium_doc is not None and number <= len(pdfium_doc):
            page = _pdfium_page(pdfium_doc, number, warnings)
            if page is not None:
                try:
                    needs_ocr = _has_images(page) or bool(text.strip())
                finally:
                    page.close()
            if needs_ocr and text.strip():
                warnings.append(f"page {number}: text layer has unmapped glyphs (cid); OCR used")
        ocr_used = False
        confidence: float | None = None
        if needs_ocr:
            stats["pages_needing_ocr"] += 1
        if needs_ocr and (mode == "ocr" or cfg.ocr_fallback):
            if ocr_ready is None:
                try:
                    require_tesseract(cfg.ocr_language)
                    ocr_ready = True
                except OcrFailed as error:
                    if mode == "ocr":
                        raise
                    ocr_ready, ocr_error = False, error
                    warnings.append(f"pages without a text layer were not OCR'd: {error.message}")
            page = _pdfium_page(pdfium_doc, number, warnings) if ocr_ready and pdfium_doc is not None else None
            if page is not None:
                try:
                    result = ocr_pdf_page(page, cfg.ocr_language, cfg.ocr_dpi)
                finally:
                    page.close()
                text, confidence, ocr_used = result.text, result.confidence, True
                stats["pages_ocr"] += 1
                if mode != "ocr":
                    stats["pages_ocr_fallback"] += 1
        stats["pages_processed"] += 1
        is_empty = not text.strip()
        stats["pages_empty"] += int(is_empty)
        pages.append(
            PageExtraction(
                page=number,
                text=text,
                char_count=len(text),
                is_empty=is_empty,
                ocr_used=ocr_used,
                confidence=confidence,
            )
        )
    if ocr_error is not None:
        stats["ocr_error"] = ocr_error.message
    return pages, stats


def _raise_empty(uri: str, mode: str, ocr_fallback: bool, stats: dict[str, Any], pages: int) -> None:
    if "ocr_error" in stats:
        raise OcrFailed(
            f"{uri} has no text layer and OCR could not run: {stats['ocr_error']}",
            suggestion="Install tesseract: 'apt-get install tesseract-ocr' (see README, Set-up)",
            details={"uri": uri},
        )
    if stats["pages_ocr"]:
        raise EmptyContent(
            f"{uri}: OCR found no text on {stats['pages_ocr']} page(s)",
            suggestion="Check the scan quality, or set extract.ocr_language to the document's language",
            details={"uri": uri},
        )
    if stats["pages_needing_ocr"] and not ocr_fallback:
        raise EmptyContent(
            f"{uri} has no text layer ({stats['pages_needing_ocr']} image-only page(s)) and OCR is off",
            suggestion="Set extract.ocr_fallback: true or extract.pdf_mode: ocr",
            details={"uri": uri},
        )
    raise EmptyContent(
        f"{uri} contains no text ({pages} page(s), no images)",
        suggestion="Nothing to index in this file; exclude it",
        details={"uri": uri},
    )
