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


def sentence_spans(text: str, start: int, end: int, language: str = "en") -> list[tuple[int, int]]:
    """Contiguous sentence spans covering [start, end).

    Text without any possible sentence end inside it is one sentence; pysbd (slow) only
    sees the rest.
    """
    piece = text[start:end]
    if not _POSSIBLE_END.search(piece):
        return [(start, end)] if end > start else []
    starts: list[int] = []
    cursor = 0
    for sentence in _segmenter(language).segment(piece):
        stripped = sentence.strip()
        if not stripped:
            continue
        found = piece.find(stripped, cursor)
        if found == -1:
            continue  # pysbd changed the text: the sentence stays part of the previous one
        starts.append(found)
        cursor = found + len(stripped)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    bounds = [*starts, len(piece)]
    return [(start + a, start + b) for a, b in pairwise(bounds) if b > a]
