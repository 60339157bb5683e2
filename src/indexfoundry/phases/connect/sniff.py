"""Content type detection: from the name and headers, then confirmed by sniffing the bytes."""

from __future__ import annotations

import mimetypes

# Extension used for the stored raw artifact, per content type.
EXTENSIONS: dict[str, str] = {
    "application/pdf": "pdf",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "md",
    "text/plain": "txt",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "application/json": "json",
    "application/x-ndjson": "jsonl",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/xml": "xml",
    "text/xml": "xml",
    "application/gzip": "gz",
    "application/octet-stream": "bin",
}

_BY_SUFFIX: dict[str, str] = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".mdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".rst": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
    ".pdf": "application/pdf",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".ndjson": "application/x-ndjson",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".xml": "application/xml",
}


def _looks_textual(head: bytes) -> bool:
    if not head:
        return True
    if head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return True
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
        return True
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        return exc.start >= len(head) - 4


# The rules of ``sniff_content_type``: a folder scan keeps each file's sniffed type in the runs
# folder's work cache under this (and the product's version), by the file's hash and name.
# Raise it with any change of the rules below.
SNIFF_RULES = "1"


def sniff_content_type(name: str, head: bytes, declared: str | None = None) -> str:
    """Best content type for a file called ``name`` starting with ``head``.

    The bytes win over the name and the declared header: a PDF served as
    ``application/octet-stream`` or saved as ``.bin`` is still a PDF.
    """
    stripped = head.lstrip()
    lowered = stripped[:512].lower()
    if head.startswith(b"%PDF-") or b"%PDF-" in head[:1024]:
        return "application/pdf"
    if head.startswith(b"PK\x03\x04"):
        if b"word/" in head or name.lower().endswith(".docx"):
            return EXTENSIONS_REVERSE["docx"]
        return "application/zip"
    if head.startswith(b"\x1f\x8b"):
        return "application/gzip"
    declared_type = (declared or "").split(";")[0].strip().lower()
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name.rsplit("/", 1)[-1] else ""
    by_name = _BY_SUFFIX.get(suffix) or (mimetypes.guess_type(name)[0] if suffix else None)
    if lowered.startswith((b"<!doctype html", b"<html")) or (
        b"<html" in lowered and declared_type in ("", "text/html", "application/octet-stream")
    ):
        return "text/html"
    if lowered.startswith(b"<?xml") and by_name not in ("text/html", "application/xhtml+xml"):
        return by_name if by_name in ("application/xml", "text/xml") else "application/xml"
    if by_name and by_name in _BY_SUFFIX.values():
        return by_name
    if declared_type and declared_type != "application/octet-stream" and declared_type in EXTENSIONS:
        return declared_type
    if by_name:
        return by_name
    if _looks_textual(head[:4096]):
        return "text/plain"
    return "application/octet-stream"


EXTENSIONS_REVERSE: dict[str, str] = {ext: ctype for ctype, ext in EXTENSIONS.items()}


def extension_for(content_type: str, name: str = "") -> str:
    """Extension for the stored artifact: follows the real type, not the original name."""
    if content_type in EXTENSIONS:
        return EXTENSIONS[content_type]
    guessed = mimetypes.guess_extension(content_type) or ""
    if guessed:
        return guessed.lstrip(".")
    return "bin"
