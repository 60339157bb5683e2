"""Sentence boundaries with pysbd (rule-based, handles abbreviations, decimals and 23 languages).

pysbd returns sentence strings, sometimes with whitespace altered; boundaries are found by
locating each sentence in the original text from a moving cursor, so sentence spans cover the
text exactly and nothing is lost.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import pairwise
from typing import Any

from indexfoundry.phases.normalize.language import detect_language


@cache
def _segmenter(language: str) -> Any:
    import pysbd

    return pysbd.Segmenter(language=language, clean=False)


@cache
def supported_languages() -> frozenset[str]:
    from pysbd.languages import LANGUAGE_CODES

    return frozenset(LANGUAGE_CODES)


def segmenter_language(text: str) -> str:
    """The pysbd language for a document: its detected language when pysbd knows it, else English."""
    code = detect_language(text)
    return code if code is not None and code in supported_languages() else "en"


# A possible sentence end inside the text: terminal punctuation, closing quotes, then more text.
_POSSIBLE_END = re.compile(
    r"[.!?\u2026\u3002\uff01\uff1f\u061f\u0964][\"'\u201d\u2019)\]]*(\s+|(?<=[\u3002\uff01\uff1f]))\S"
)


# pysbd's time grows with the square of its input (20 s for 70 KB of short sentences), so a
# long paragraph is cut at possible sentence ends into windows of about this many characters,
# each segmented alone: linear in the paragraph, at the price of a forced boundary between windows.
_WINDOW = 4000


def _windows(piece: str) -> list[tuple[int, int]]:
    """[start, end) windows covering ``piece``, cut at possible sentence ends once longer than ``_WINDOW``."""
    if len(piece) <= _WINDOW:
        return [(0, len(piece))]
    out: list[tuple[int, int]] = []
    begin = 0
    for match in _POSSIBLE_END.finditer(piece):
        cut = match.end() - 1  # the first character of the next sentence
        if cut - begin >= _WINDOW:
            out.append((begin, cut))
            begin = cut
    out.append((begin, len(piece)))
    return out


def sentence_spans(text: str, start: int, end: int, language: str = "en") -> list[tuple[int, int]]:
    """Contiguous sentence spans covering [start, end).

    Text without any possible sentence end inside it is one sentence; pysbd (slow) only
    sees the rest, one window at a time.
    """
    piece = text[start:end]
    if not _POSSIBLE_END.search(piece):
        return [(start, end)] if end > start else []
    starts: set[int] = set()
    for window_start, window_end in _windows(piece):
        window = piece[window_start:window_end]
        starts.add(window_start)
        cursor = 0
        for sentence in _segmenter(language).segment(window):
            stripped = sentence.strip()
            if not stripped:
                continue
            found = window.find(stripped, cursor)
            if found == -1:
                continue  # pysbd changed the text: the sentence stays part of the previous one
            starts.add(window_start + found)
            cursor = found + len(stripped)
    bounds = [*sorted(starts), len(piece)]
    return [(start + a, start + b) for a, b in pairwise(bounds) if b > a]
