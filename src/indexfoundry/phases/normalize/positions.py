"""Character offsets to UTF-8 byte offsets and line numbers, in time linear in the text.

A text is cut into fixed windows of ``STRIDE`` characters; one pass records, for every
window start, its UTF-8 byte offset and the number of newlines before it. A lookup then
reads at most one window, so its cost does not depend on where the character is: a 49 MB
text on one line costs the same per lookup as one with short lines. (Counting from the
start of the character's line, as before, made one-line documents quadratic, and a list of
every line start cost ~36 bytes per line.) The tables hold ``len(text) / STRIDE`` entries.
"""

from __future__ import annotations

from bisect import bisect_left

# Characters per window: small enough that reading one window is cheap, large enough that
# the tables stay tiny (about 12,000 entries for 49 MB).
STRIDE = 4096


def _utf8_length(text: str, start: int, end: int) -> int:
    """UTF-8 length of ``text[start:end]`` (a lone surrogate, which strict UTF-8 refuses, counts 3)."""
    return len(text[start:end].encode("utf-8", "surrogatepass"))


class TextPositions:
    """Maps character offsets of one text to byte offsets and 1-based line numbers, and back
    from line numbers to character offsets."""

    def __init__(self, text: str, stride: int = STRIDE) -> None:
        self.text = text
        self.stride = stride
        self.ascii = text.isascii()  # then a character offset is a byte offset
        self.byte_marks: list[int] = []
        self.line_marks: list[int] = []
        total = lines = 0
        for start in range(0, len(text) + 1, stride):
            self.byte_marks.append(total)
            self.line_marks.append(lines)
            if not self.ascii:
                total += _utf8_length(text, start, start + stride)
            lines += text.count("\n", start, start + stride)

    def line_of(self, char: int) -> int:
        """1-based line containing character ``char`` (``0 <= char <= len(text)``)."""
        window = char // self.stride
        return self.line_marks[window] + self.text.count("\n", window * self.stride, char) + 1

    def byte_of(self, char: int) -> int:
        """UTF-8 byte offset of character ``char`` (``0 <= char <= len(text)``)."""
        if self.ascii:
            return char
        window = char // self.stride
        start = window * self.stride
        return self.byte_marks[window] + _utf8_length(self.text, start, char)

    def line_start(self, line: int) -> int | None:
        """Character offset where 1-based ``line`` starts, or None if the text has no such line."""
        if line < 1:
            return None
        if line == 1:
            return 0
        newlines = line - 1  # the line starts after its (line - 1)-th newline
        window = max(0, bisect_left(self.line_marks, newlines) - 1)
        pos = window * self.stride - 1
        for _ in range(newlines - self.line_marks[window]):
            pos = self.text.find("\n", pos + 1)
            if pos == -1:
                return None
        return pos + 1
