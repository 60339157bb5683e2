"""Character offsets to UTF-8 byte offsets and line numbers, without re-encoding whole texts."""

from __future__ import annotations

from bisect import bisect_right

from indexfoundry.phases.normalize.chunkers import line_starts


class TextPositions:
    """Maps character offsets of one text to byte offsets and 1-based line numbers."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)
        self.byte_starts: list[int] = []
        total = 0
        for index, start in enumerate(self.starts):
            self.byte_starts.append(total)
            end = self.starts[index + 1] if index + 1 < len(self.starts) else len(text)
            total += len(text[start:end].encode("utf-8"))

    def line_of(self, char: int) -> int:
        """1-based line containing character ``char``."""
        return bisect_right(self.starts, char)

    def byte_of(self, char: int) -> int:
        """UTF-8 byte offset of character ``char``."""
        line = bisect_right(self.starts, char) - 1
        start = self.starts[line]
        return self.byte_starts[line] + len(self.text[start:char].encode("utf-8"))
