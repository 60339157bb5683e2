"""Decoding bytes to text: BOM, UTF-8, then charset detection; undecodable input is a PARSE_ERROR."""

from __future__ import annotations

import codecs

from charset_normalizer import from_bytes

from indexfoundry.errors import ParseError

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes, declared: str | None = None, uri: str = "") -> tuple[str, str]:
    """Decode ``data``; returns (text, encoding used). Line endings are normalised to '\\n'."""
    encoding: str | None = None
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding = name
            break
    text: str | None = None
    if encoding is not None:
        text = data.decode(encoding, errors="strict")
    else:
        candidates = [declared] if declared else []
        candidates.append("utf-8")
        for name in candidates:
            try:
                text = data.decode(name or "utf-8", errors="strict")
                encoding = name
                break
            except (UnicodeDecodeError, LookupError):
                continue
        if text is None:
            best = from_bytes(data).best()
            if best is None or "\x00" in str(best):
                raise ParseError(
                    f"{uri or 'document'} cannot be decoded as text (binary or unknown encoding)",
                    suggestion="Exclude the file, or convert it to UTF-8",
                    details={"uri": uri},
                )
            text = str(best)
            encoding = best.encoding
    if "\x00" in text:
        raise ParseError(
            f"{uri or 'document'} contains NUL bytes: not a text file",
            suggestion="Exclude the file, or pass format_hint if it really is text",
            details={"uri": uri},
        )
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, encoding or "utf-8"
