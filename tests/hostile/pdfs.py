"""Hand-built hostile PDFs (small files with correct xref tables, so every parser gets past the header)."""

from __future__ import annotations


def build_pdf(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF whose object ``i + 1`` is ``objects[i]``, with a valid xref table and trailer."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)


def stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def page_tree_loop() -> bytes:
    """The page tree's kid is the tree itself: a naive walker never ends."""
    return build_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>"])


def millions_of_pages() -> bytes:
    """A page tree that claims ten million pages but holds one."""
    return build_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 10000000 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            stream(b"BT /F1 12 Tf 72 700 Td (Hello hostile world) Tj ET"),
            FONT,
        ]
    )


def deep_nesting(depth: int = 200_000) -> bytes:
    """An array nested ``depth`` levels deep inside the page dictionary."""
    nested = b"[" * depth + b"]" * depth
    return build_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Deep " + nested + b" /Contents 4 0 R >>",
            stream(b"BT /F1 12 Tf 72 700 Td (deep) Tj ET"),
        ]
    )


def slow_page(operations: int = 400_000) -> bytes:
    """One page whose content stream has ``operations`` text-showing operations."""
    ops = b"BT /F1 1 Tf " + b"1 0 Td (x) Tj " * operations + b"ET"
    return build_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            stream(ops),
            FONT,
        ]
    )
