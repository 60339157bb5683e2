"""Hybrid's legs: a cheap query embedding runs inline; one slow enough to pay for a thread
hand-off runs beside the keyword leg, which stays in the calling thread."""

from __future__ import annotations

import threading

from indexfoundry.retrieval.legs import OVERLAP_EMBEDDING_S, QueryLegs


def test_a_cheap_embedding_runs_inline_before_the_keyword_leg() -> None:
    legs = QueryLegs()
    order: list[tuple[str, int]] = []

    def embed() -> str:
        order.append(("embed", threading.get_ident()))
        return "vector"

    def keyword() -> list[str]:
        order.append(("keyword", threading.get_ident()))
        return ["a"]

    assert legs.both(embed, keyword) == ("vector", ["a"])
    assert order == [("embed", threading.get_ident()), ("keyword", threading.get_ident())]
    assert legs.embed_seconds < OVERLAP_EMBEDDING_S
    legs.close()


def test_a_slow_embedding_overlaps_the_keyword_leg_on_a_second_thread() -> None:
    legs = QueryLegs()
    legs.embed_seconds = OVERLAP_EMBEDDING_S  # the last query's embedding took that long
    keyword_started = threading.Event()
    seen: dict[str, int] = {}

    def embed() -> bool:
        seen["embed"] = threading.get_ident()
        # Returns True only when the keyword leg runs while this embedding is still going.
        return keyword_started.wait(timeout=30)

    def keyword() -> str:
        seen["keyword"] = threading.get_ident()
        keyword_started.set()
        return "ranking"

    assert legs.both(embed, keyword) == (True, "ranking")
    assert seen["keyword"] == threading.get_ident() != seen["embed"]
    assert legs.embed_seconds > 0
    legs.close()
    assert legs._executor is None


def test_an_embedding_error_reaches_the_caller_after_the_keyword_leg() -> None:
    legs = QueryLegs()
    legs.embed_seconds = 1.0

    def embed() -> None:
        raise ValueError("model failed")

    ran: list[str] = []
    try:
        legs.both(embed, lambda: ran.append("keyword"))
    except ValueError as exc:
        assert str(exc) == "model failed"
    else:  # pragma: no cover - the error must surface
        raise AssertionError("the embedding's error was swallowed")
    assert ran == ["keyword"]
    legs.close()
