"""Markdown blocks (``phases/normalize/blocks.py``): paragraphs, fences and tables with exact offsets,
so structure-aware chunkers never cut a fence or a table they can keep whole."""

from __future__ import annotations

from indexfoundry.phases.normalize.blocks import Block, fences_at, split_blocks


def _blocks(text: str) -> list[tuple[str, str]]:
    return [(b.kind, text[b.start : b.end]) for b in split_blocks(text, 0, len(text))]


def test_paragraphs_are_split_at_blank_lines_which_belong_to_no_block():
    text = "First line\nsame paragraph\n\n \t\nSecond paragraph\n"
    assert _blocks(text) == [("text", "First line\nsame paragraph\n"), ("text", "Second paragraph\n")]


def test_a_blank_line_inside_a_fence_does_not_end_it_and_the_closer_is_located():
    text = "Intro\n```python\nx = 1\n\ny = 2\n```\nAfter\n"
    blocks = list(split_blocks(text, 0, len(text)))
    assert [(b.kind, text[b.start : b.end]) for b in blocks] == [
        ("text", "Intro\n"),
        ("fence", "```python\nx = 1\n\ny = 2\n```\n"),
        ("text", "After\n"),
    ]
    fence = blocks[1]
    assert text[fence.start : fence.head_end] == "```python\n"
    assert fence.closer_start is not None and text[fence.closer_start :].startswith("```\nAfter")


def test_an_unclosed_fence_runs_to_the_end_of_the_range():
    text = "~~~\ncode\n\nmore code\n"
    (fence,) = split_blocks(text, 0, len(text))
    assert (fence.kind, fence.start, fence.end, fence.closer_start) == ("fence", 0, len(text), None)


def test_a_table_is_its_header_delimiter_and_rows_and_ends_at_the_first_line_without_a_pipe():
    text = "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\nNot a row\n"
    blocks = list(split_blocks(text, 0, len(text)))
    assert [(b.kind, text[b.start : b.end]) for b in blocks] == [
        ("table", "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\n"),
        ("text", "Not a row\n"),
    ]
    assert text[blocks[0].start : blocks[0].head_end] == "| a | b |\n|---|:-:|\n"


def test_a_line_with_a_pipe_but_no_delimiter_row_is_just_text():
    text = "a | b\nplain next line\n"
    assert _blocks(text) == [("text", text)]


def test_blocks_of_a_range_carry_offsets_in_the_whole_text():
    text = "skip me\n\nkept paragraph\n\n```\nfenced\n```\n\ntail"
    start = text.index("kept")
    end = text.index("tail")
    blocks = list(split_blocks(text, start, end))
    assert blocks[0] == Block(start, start + len("kept paragraph\n"), "text")
    assert [b.kind for b in blocks] == ["text", "fence"]
    assert all(start <= b.start < b.end <= end for b in blocks)


def test_each_offset_gets_the_opener_of_the_fence_whose_body_or_closer_it_falls_in():
    text = "Intro.\n\n  ~~~~yaml title=x\na: 1\n\nb: 2\n  ~~~~\n\nAfter.\n\n```\nbare\n```\n"
    body, blank, closer = text.index("a: 1"), text.index("\nb: 2") + 1, text.index("  ~~~~\n")
    after, opener, bare = text.index("After"), text.index("  ~~~~yaml"), text.index("bare")
    starts = [after, body, 0, closer, opener, bare, blank]  # any order
    yaml = "~~~~yaml title=x"
    assert fences_at(text, starts) == [None, yaml, None, yaml, None, "```", yaml]


def test_a_text_without_fence_markers_is_not_scanned_and_has_no_fence_anywhere():
    assert fences_at("just prose\n\nmore prose", [0, 5, 12]) == [None, None, None]
    assert fences_at("```\nunclosed code\nto the end", [4, 20, -1]) == ["```", "```", None]
