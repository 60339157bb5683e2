"""Decoding bytes to text: BOM, the declared charset (HTTP header), the ``<meta charset>`` of an
HTML page, UTF-8, then charset sniffing; undecodable input is a PARSE_ERROR.

The order follows the WHATWG encoding sniffing algorithm: a BOM wins over everything, then
the transport layer's charset, then the document's own declaration, then detection.
"""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

from indexfoundry.errors import ParseError

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# <meta charset="x"> or <meta http-equiv="Content-Type" content="text/html; charset=x">
_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_:.+-]+)""",
    re.IGNORECASE,
)
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?([a-zA-Z0-9_:.+-]+)""", re.IGNORECASE)

# WHATWG: these labels all mean windows-1252 on the web (a page "in latin-1" uses cp1252 bytes).
_WEB_ALIASES = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin-1": "cp1252",
    "latin1": "cp1252",
    "l1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "windows-1252": "cp1252",
    "x-sjis": "shift_jis",
}


def charset_from_content_type(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type header value, if any."""
    if not content_type:
        return None
    match = _CHARSET_PARAM.search(content_type)
    return match.group(1) if match else None


def declared_charset(content_type: str | None, extract_options: dict[str, object] | None) -> str | None:
    """Transport charset of a raw file: the ``charset`` of its stored Content-Type, or
    ``extract_options["charset"]`` (where connect keeps an HTTP header's charset)."""
    found = charset_from_content_type(content_type)
    if found is None and extract_options:
        value = extract_options.get("charset")
        found = value if isinstance(value, str) and value else None
    return found


def meta_charset(data: bytes) -> str | None:
    """Charset declared by an HTML page's ``<meta>`` in its first 4 KiB (ASCII-compatible pages)."""
    match = _META_CHARSET.search(data[:4096])
    return match.group(1).decode("ascii") if match else None


def _codec(label: str | None, web: bool) -> str | None:
    """Python codec name for a charset label, or None when the label is unknown."""
    if not label:
        return None
    name = label.strip().lower()
    if web:
        name = _WEB_ALIASES.get(name, name)
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _bom_encoding(data: bytes) -> str | None:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    return None


def _sniff_utf16(data: bytes) -> str | None:
    """UTF-16 without a BOM: mostly-ASCII text shows NUL in every other byte."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even = sample[0::2].count(0)
    odd = sample[1::2].count(0)
    half = len(sample) // 2
    if odd > 0.4 * half and even < 0.05 * half:
        return "utf-16-le"
    if even > 0.4 * half and odd < 0.05 * half:
        return "utf-16-be"
    return None


def _detect(data: bytes) -> str | None:
    """Sniff the encoding; among equally likely code pages prefer windows-1252, the web's default."""
    matches = list(from_bytes(data[: 1 << 20]))
    if not matches:
        return None
    least = min(m.chaos for m in matches)
    tied = [m for m in matches if m.chaos <= least + 0.001]
    for match in tied:
        if "cp1252" in match.could_be_from_charset:
            return "cp1252"
    return str(tied[0].encoding)


def decode_text(
    data: bytes,
    declared: str | None = None,
    uri: str = "",
    *,
    html: bool = False,
) -> tuple[str, str]:
    """Decode ``data``; returns (text, encoding used). Line endings are normalised to '\\n'.

    ``declared`` is a charset label from the transport (an HTTP ``charset``); with ``html``
    the page's ``<meta charset>`` is honoured too and web label aliases apply (latin-1 means
    windows-1252, as browsers read it).
    """
    text: str | None = None
    encoding = _bom_encoding(data)
    if encoding is not None:
        try:
            text = data.decode(encoding, errors="strict")
        except UnicodeDecodeError:  # a BOM followed by bytes that do not fit it (e.g. odd-length UTF-16)
            text = None
    if text is None:
        candidates: list[str] = []
        for label in (declared, meta_charset(data) if html else None):
            codec = _codec(label, web=html)
            if codec and codec not in candidates:
                # A page declaring UTF-16 in an ASCII-compatible <meta> is really UTF-8 (WHATWG).
                if html and codec.startswith("utf-16") and label is not declared:
                    codec = "utf-8"
                candidates.append(codec)
        utf16 = _sniff_utf16(data)
        if utf16:
            candidates.append(utf16)
        candidates.append("utf-8")
        for name in candidates:
            try:
                text = data.decode(name, errors="strict")
                encoding = name
                break
            except (UnicodeDecodeError, LookupError):
                continue
        if text is None:
            best_encoding = _detect(data)
            try:
                text = data.decode(best_encoding or "", errors="strict") if best_encoding else None
            except (UnicodeDecodeError, LookupError):
                text = None
            if text is None or "\x00" in text:
                raise ParseError(
                    f"{uri or 'document'} cannot be decoded as text (binary or unknown encoding)",
                    suggestion="Exclude the file, or convert it to UTF-8",
                    details={"uri": uri},
                )
            encoding = best_encoding
    if "\x00" in text:
        raise ParseError(
            f"{uri or 'document'} contains NUL bytes: not a text file",
            suggestion="Exclude the file, or pass format_hint if it really is text",
            details={"uri": uri},
        )
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, encoding or "utf-8"
