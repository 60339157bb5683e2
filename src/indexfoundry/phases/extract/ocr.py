"""OCR with the real tesseract (through pytesseract) on PDF pages rendered by pypdfium2.

Pages are rendered at a fixed DPI in grayscale, so the same PDF always gives the same
image and therefore the same OCR text. One tesseract call per page produces both the
text (tesseract's own reading order, columns included) and the word confidences.
"""

from __future__ import annotations

import csv
import io
import shutil
import string
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from indexfoundry.errors import OcrFailed

INSTALL_HINT = (
    "Install tesseract: 'apt-get install tesseract-ocr' (Debian/Ubuntu), 'brew install tesseract' (macOS), "
    "see https://tesseract-ocr.github.io/tessdoc/Installation.html"
)

# Longest side of a rendered page, in pixels: tesseract refuses images over 32767 px and
# huge renders only cost memory. Pages larger than this are rendered at a lower DPI.
MAX_SIDE_PX = 10000


@dataclass(frozen=True)
class OcrPage:
    """Text and mean word confidence (0-100) of one OCR'd page."""

    text: str
    confidence: float
    dpi: int


def _pytesseract() -> Any:
    import pytesseract

    return pytesseract


def _tesseract_cmd() -> str:
    """The tesseract command pytesseract runs (its default until pytesseract is loaded)."""
    loaded = sys.modules.get("pytesseract.pytesseract")
    return str(getattr(loaded, "tesseract_cmd", "tesseract")) if loaded is not None else "tesseract"


@lru_cache(maxsize=1)
def tesseract_version() -> str | None:
    """Installed tesseract version ('5.3.0'), or None when tesseract is not installed.

    Asked of ``tesseract --version`` and read as pytesseract reads it, without importing
    pytesseract: every extract fingerprint needs the version, and a run with no page to OCR
    should not pay for loading the OCR library."""
    from packaging.version import InvalidVersion, Version

    try:
        output = subprocess.run(
            [_tesseract_cmd(), "--version"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    text, *_ = output.decode("utf-8", "replace").lstrip(string.printable[10:]).partition(" ")
    text, *_ = text.partition("-")
    try:
        return str(Version(text))
    except InvalidVersion:
        return None


def require_tesseract(language: str) -> None:
    """Raise OCR_FAILED unless tesseract and every language in ``language`` ('eng+fra') are installed."""
    pytesseract = _pytesseract()
    if shutil.which(str(pytesseract.pytesseract.tesseract_cmd)) is None or tesseract_version() is None:
        raise OcrFailed(
            "tesseract is not installed (needed to OCR pages without a text layer)",
            suggestion=INSTALL_HINT,
            details={"tesseract_cmd": str(pytesseract.pytesseract.tesseract_cmd)},
        )
    available = set(_languages())
    missing = [lang for lang in language.split("+") if lang and lang not in available]
    if missing:
        raise OcrFailed(
            f"tesseract has no language data for {', '.join(missing)}",
            suggestion=f"Install it, e.g. 'apt-get install tesseract-ocr-{missing[0]}', or set extract.ocr_language",
            details={"available": sorted(available)},
        )


@lru_cache(maxsize=1)
def _languages() -> tuple[str, ...]:
    pytesseract = _pytesseract()
    try:
        return tuple(pytesseract.get_languages())
    except (OSError, pytesseract.TesseractError, pytesseract.TesseractNotFoundError):
        return ()


def _mean_confidence(tsv: str) -> float:
    """Mean confidence of the recognised words in tesseract's TSV output (0 when none)."""
    scores: list[float] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        try:
            conf = float(row.get("conf") or -1)
        except ValueError:
            continue
        if conf >= 0 and (row.get("text") or "").strip():
            scores.append(conf)
    return round(sum(scores) / len(scores), 2) if scores else 0.0


def _clean(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\f", "").splitlines()]
    out: list[str] = []
    for line in lines:
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return "\n".join(out).strip()


def ocr_pdf_page(page: Any, language: str, dpi: int) -> OcrPage:
    """Render one pypdfium2 page at ``dpi`` (grayscale) and OCR it."""
    width, height = page.get_size()  # PDF points (1/72 inch)
    scale = dpi / 72
    longest = max(width, height) * scale
    if longest > MAX_SIDE_PX:
        scale = MAX_SIDE_PX / max(width, height)
    bitmap = page.render(scale=scale, grayscale=True)
    image = bitmap.to_pil()
    pytesseract = _pytesseract()
    try:
        text, tsv = pytesseract.run_and_get_multiple_output(image, extensions=["txt", "tsv"], lang=language)
    except pytesseract.TesseractNotFoundError:
        raise OcrFailed("tesseract is not installed", suggestion=INSTALL_HINT) from None
    except (pytesseract.TesseractError, OSError, RuntimeError) as exc:
        raise OcrFailed(
            f"tesseract failed: {' '.join(str(exc).split())[:300]}",
            suggestion="Check the page image and the tesseract installation (tesseract --version)",
        ) from None
    finally:
        image.close()
        bitmap.close()
    return OcrPage(text=_clean(text), confidence=_mean_confidence(tsv), dpi=round(scale * 72))
