"""Hybrid's legs: a semantic leg as short as a thread hand-off runs in line with the keyword
leg; a longer one runs on a second thread while the keyword leg runs on the caller's."""

from __future__ import annotations

import threading

import pytest

from indexfoundry.retrieval.legs import OVERLAP_SEMANTIC_S, QueryLegs


def test_a_short_semantic_leg_runs_in_line_before_the_keyword_leg() -> None:
    legs = QueryLegs()
    order: list[tuple[str, int]] = []

    def semantic() -> str:
        order.append(("semantic", threading.get_ident()))
        return "nearest"

    def keyword() -> list[str]:
        order.append(("keyword", threading.get_ident()))
        return ["a"]

    assert legs.both(semantic, keyword) == ("nearest", ["a"])
    assert order == [("semantic", threading.get_ident()), ("keyword", threading.get_ident())]
    assert legs.semantic_seconds < OVERLAP_SEMANTIC_S
    legs.close()


def test_a_long_semantic_leg_runs_on_a_second_thread_beside_the_keyword_leg() -> None:
    legs = QueryLegs()
    legs.semantic_seconds = OVERLAP_SEMANTIC_S  # the last semantic leg took that long
    keyword_ran = threading.Event()
    seen: dict[str, int] = {}

    def semantic() -> bool:
        seen["semantic"] = threading.get_ident()
        # True only when the keyword leg runs while this leg is still going.
        return keyword_ran.wait(timeout=30)

    def keyword() -> str:
        seen["keyword"] = threading.get_ident()
        keyword_ran.set()
        return "ranking"

    assert legs.both(semantic, keyword) == (True, "ranking")
    assert seen["keyword"] == threading.get_ident() != seen["semantic"]
    assert legs.semantic_seconds > 0  # timed on its thread: it decides the next query
    legs.close()
    assert legs._executor is None


def test_a_failing_leg_reaches_the_caller_after_the_other_finished() -> None:
    legs = QueryLegs()
    legs.semantic_seconds = 1.0
    ran: list[str] = []

    def semantic() -> None:
        raise ValueError("store failed")

    with pytest.raises(ValueError, match="store failed"):
        legs.both(semantic, lambda: ran.append("keyword"))
    assert ran == ["keyword"]

    def keyword() -> None:
        raise ValueError("index failed")

    with pytest.raises(ValueError, match="index failed"):
        legs.both(lambda: ran.append("semantic"), keyword)
    assert ran == ["keyword", "semantic"]  # the semantic leg finished before the error went up
    legs.close()
