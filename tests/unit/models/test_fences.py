"""Fenced code blocks in markdown text (``models/fences.py``): the opener and closer rules, and a
chunk's text shown with its fences whole, however the chunker cut the code block."""

from __future__ import annotations

import pytest

from indexfoundry.models.fences import as_markdown, fence_after, fence_closes, fence_opener


@pytest.mark.parametrize(
    ("line", "marker"),
    [("```", "```"), ("  ````js", "````"), ("~~~ yaml", "~~~"), ("\t```", "```"), ("``` a`b", None), ("``", None)],
)
def test_fence_openers_follow_commonmark(line: str, marker: str | None):
    assert fence_opener(line) == marker


def test_a_fence_closes_only_with_its_own_character_at_least_as_long_and_nothing_after():
    assert fence_closes("```", "```") and fence_closes("`````", "```") and fence_closes("  ~~~", "~~~")
    assert not fence_closes("~~~", "```")
    assert not fence_closes("```", "````")
    assert not fence_closes("``` python", "```")


def test_text_that_begins_inside_a_fence_gets_its_opener_back_and_stays_code_to_its_end():
    middle = "    return value\n\n# a comment, not a heading\nprint(value)"
    shown = as_markdown(middle, "```python")
    assert shown == "```python\n" + middle + "\n```"
    assert fence_after(middle, "```python") == "```python"


def test_a_closing_line_ends_the_reopened_fence_and_the_prose_after_it_stays_prose():
    tail = "print(value)\n```\n\nAfter the code, prose."
    assert as_markdown(tail, "```python") == "```python\n" + tail
    assert fence_after(tail, "```python") is None


def test_text_that_ends_inside_a_fence_is_closed_with_the_openers_own_marker():
    head = "Intro.\n\n~~~~ yaml\nkey: value"
    assert as_markdown(head) == head + "\n~~~~"
    assert fence_after(head) == "~~~~ yaml"


def test_text_with_whole_fences_or_none_is_shown_as_it_is():
    whole = "Intro.\n\n```js\nlet a = 1;\n```\n\nEnd."
    assert as_markdown(whole) == whole and as_markdown("plain prose") == "plain prose"
    # A shorter or other-character line inside a fence does not close it.
    assert fence_after("```` md\n```\n~~~~\nstill code") == "```` md"
