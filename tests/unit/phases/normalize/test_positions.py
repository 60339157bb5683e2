"""Position mapping agrees with re-encoding the prefix, for any text and window size."""

from __future__ import annotations

from bisect import bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st

from indexfoundry.phases.normalize.positions import TextPositions

_TEXT = st.text(alphabet=st.sampled_from(["a", " ", "\n", "\u00e9", "\u65e5", "\U0001f600", "\r"]), max_size=80)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, stride=st.sampled_from([1, 2, 3, 7, 64, 4096]))
def test_byte_line_and_line_start_agree_with_the_naive_definitions(text: str, stride: int):
    positions = TextPositions(text, stride=stride)
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    for char in range(len(text) + 1):
        assert positions.byte_of(char) == len(text[:char].encode("utf-8"))
        assert positions.line_of(char) == bisect_right(starts, char)
    for line in range(-1, len(starts) + 3):
        expected = starts[line - 1] if 1 <= line <= len(starts) else None
        assert positions.line_start(line) == expected


def test_a_one_line_text_keeps_tables_proportional_to_its_windows_not_its_characters():
    text = "\u00e9" * 100_000
    positions = TextPositions(text)
    assert len(positions.byte_marks) == 100_000 // 4096 + 1
    assert positions.byte_of(len(text)) == 200_000
