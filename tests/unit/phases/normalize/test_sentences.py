"""Sentence spans (``phases/normalize/sentences.py``): contiguous, covering the text exactly, with
pysbd's rules for abbreviations and decimals, and windows for long paragraphs."""

from __future__ import annotations

from itertools import pairwise

import pytest

from indexfoundry.phases.normalize.sentences import segmenter_language, sentence_spans


def _covers(text: str, spans: list[tuple[int, int]], start: int, end: int) -> None:
    assert spans[0][0] == start and spans[-1][1] == end
    assert all(a < b for a, b in spans)
    assert all(prev[1] == nxt[0] for prev, nxt in pairwise(spans))
    assert "".join(text[a:b] for a, b in spans) == text[start:end]


def test_sentences_split_at_their_ends_and_cover_the_text_exactly():
    text = "First sentence. Second one! A third? Yes."
    spans = sentence_spans(text, 0, len(text))
    _covers(text, spans, 0, len(text))
    assert [text[a:b].strip() for a, b in spans] == ["First sentence.", "Second one!", "A third?", "Yes."]


def test_abbreviations_and_decimals_do_not_end_a_sentence():
    text = "Dr. Smith paid 3.50 dollars, e.g. for tea. Then he left."
    spans = sentence_spans(text, 0, len(text))
    _covers(text, spans, 0, len(text))
    assert [text[a:b].strip() for a, b in spans] == ["Dr. Smith paid 3.50 dollars, e.g. for tea.", "Then he left."]


def test_spans_of_a_slice_are_offsets_in_the_whole_text():
    text = "Ignored prefix. One here. Two here. Ignored suffix."
    start = text.index("One")
    end = text.index(" Ignored suffix")
    spans = sentence_spans(text, start, end)
    _covers(text, spans, start, end)
    assert [text[a:b].strip() for a, b in spans] == ["One here.", "Two here."]


@pytest.mark.parametrize("text", ["no sentence end at all", "a heading-like line without punctuation", "v1.2 rc"])
def test_text_without_a_possible_sentence_end_is_one_sentence(text: str):
    assert sentence_spans(text, 0, len(text)) == [(0, len(text))]


def test_an_empty_range_has_no_sentences():
    assert sentence_spans("Some text.", 4, 4) == []


def test_a_paragraph_longer_than_one_window_is_still_covered_exactly():
    text = " ".join(f"Sentence number {n} says something short." for n in range(400))
    spans = sentence_spans(text, 0, len(text))
    _covers(text, spans, 0, len(text))
    assert len(spans) == 400


def test_the_segmenter_language_is_the_detected_one_when_pysbd_knows_it_else_english():
    german = "Das ist ein ganz normaler deutscher Satz über das Wetter und die Berge im Sommer."
    assert segmenter_language(german) == "de"
    assert segmenter_language("1234 5678 !!!") == "en"
