"""PDF facts for ``indexfoundry_connect_pdf``: page count, version, text layer, metadata (pypdfium2)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium

from indexfoundry.errors import ParseError

_PDF_DATE = re.compile(
    r"^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*(?:([Zz])|([+-])(\d{2})'?(\d{2})?'?)?"
)


def pdf_date_to_iso(value: str | None) -> str | None:
    """``D:20080424142424+09'00'`` → ``2008-04-24T14:24:24+09:00`` (None when absent or unreadable)."""
    if not value:
        return None
    match = _PDF_DATE.match(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, zulu, sign, tz_h, tz_m = match.groups()
    text = f"{year}-{month or '01'}-{day or '01'}T{hour or '00'}:{minute or '00'}:{second or '00'}"
    if zulu:
        return text + "Z"
    if sign:
        return f"{text}{sign}{tz_h}:{tz_m or '00'}"
    return text


@dataclass
class PdfInfo:
    """What ``connect_pdf`` reports about a PDF."""

    page_count: int
    pdf_version: str
    has_ocr_layer: bool
    metadata: dict[str, str] = field(default_factory=dict)


def pdf_info(path: Path, password: str | None = None) -> PdfInfo:
    """Read the page count, version, text layer and metadata of the PDF at ``path``.

    ``has_ocr_layer`` is true when any page carries text (a born-digital PDF or a scan with an
    OCR text layer); false means extraction will need OCR.
    """
    try:
        document = pdfium.PdfDocument(str(path), password=password)
    except pdfium.PdfiumError as exc:
        encrypted = "password" in str(exc).lower()
        raise ParseError(
            f"cannot open PDF {path.name}: {exc}",
            suggestion=(
                "The PDF is encrypted: set extract.pdf_password_env to a variable holding its password"
                if encrypted
                else "The file is damaged or not a PDF"
            ),
            details={"encrypted": encrypted},
        ) from None
    try:
        count = len(document)
        version = document.get_version()
        has_text = False
        for index in range(count):
            page = document[index]
            try:
                textpage = page.get_textpage()
                try:
                    has_text = textpage.count_chars() > 0
                finally:
                    textpage.close()
            finally:
                page.close()
            if has_text:
                break
        raw = document.get_metadata_dict(skip_empty=True)
    finally:
        document.close()
    metadata: dict[str, str] = {}
    if raw.get("Title"):
        metadata["title"] = raw["Title"]
    if raw.get("Author"):
        metadata["author"] = raw["Author"]
    for key, name in (("CreationDate", "created"), ("ModDate", "modified")):
        iso = pdf_date_to_iso(raw.get(key))
        if iso:
            metadata[name] = iso
    return PdfInfo(
        page_count=count,
        pdf_version=f"{version // 10}.{version % 10}" if version else "unknown",
        has_ocr_layer=has_text,
        metadata=metadata,
    )
