"""Chunks fit the embedding model's token window (``phases/normalize/window.py``)."""

from __future__ import annotations

import pytest

from indexfoundry.models.config import IndexConfig, NormalizeConfig
from indexfoundry.phases.normalize.chunkers import chunk_spans
from indexfoundry.phases.normalize.figures import totals
from indexfoundry.phases.normalize.packing import Span
from indexfoundry.phases.normalize.window import (
    TokenWindow,
    embedded_text,
    fit_spans,
    model_window,
    token_counts,
    token_window,
)


def words(texts: list[str]) -> list[int]:
    """A stand-in tokenizer: one token per word plus the two special tokens."""
    return [len(t.split()) + 2 for t in texts]


WINDOW = TokenWindow(max_tokens=40, tokenizer="words", count=words)


def paragraphs(count: int, length: int) -> str:
    return "\n\n".join(" ".join(f"w{p}x{i}" for i in range(length)) + "." for p in range(count))


def test_a_chunk_longer_than_the_window_is_split_into_pieces_that_fit():
    text = paragraphs(6, 25)
    spans = [Span(0, len(text))]
    fitted, split = fit_spans(text, spans, WINDOW)
    assert split == 1 and len(fitted) > 1
    assert max(words([embedded_text(s, text) for s in fitted])) <= WINDOW.max_tokens
    # Nothing lost or repeated: the pieces cover every word once, in order.
    assert " ".join(s.text(text) for s in fitted).split() == text.split()


def test_chunks_that_fit_are_left_exactly_as_they_were():
    text = paragraphs(2, 10)
    spans = chunk_spans(text, [], NormalizeConfig(max_chars=100, min_chars=50, overlap_chars=0))
    assert fit_spans(text, spans, WINDOW) == (spans, 0)


def test_the_breadcrumb_counts_against_the_window_and_split_sections_get_part_markers():
    text = paragraphs(1, 35)
    crumb = " > ".join(f"heading{i}" for i in range(10))
    spans = [Span(0, len(text), heading_path=crumb, section="heading9")]
    assert words([text])[0] <= WINDOW.max_tokens < words([embedded_text(spans[0], text)])[0]
    fitted, split = fit_spans(text, spans, WINDOW)
    assert split == 1
    assert [s.part for s in fitted] == [f"{i}/{len(fitted)}" for i in range(1, len(fitted) + 1)]
    assert max(words([embedded_text(s, text) for s in fitted])) <= WINDOW.max_tokens


def test_a_word_longer_than_the_window_is_hard_cut_until_it_fits():
    text = "x" * 5000
    fitted, _ = fit_spans(text, [Span(0, len(text))], TokenWindow(40, "chars", lambda ts: [len(t) // 10 for t in ts]))
    assert all(s.hard_cut for s in fitted)
    assert max(len(s.text(text)) // 10 for s in fitted) <= 40


def test_the_window_is_the_models_unless_max_tokens_is_lower():
    assert model_window("local") == model_window("local-int8") == 256
    assert model_window("hash") is None and model_window("openai:text-embedding-3-small") is None
    assert token_window(NormalizeConfig(), IndexConfig(embedding_model="hash")) is None
    default = token_window(NormalizeConfig(), IndexConfig())
    assert default is not None and default.max_tokens == 256
    lower = token_window(NormalizeConfig(max_tokens=128), IndexConfig())
    higher = token_window(NormalizeConfig(max_tokens=1000), IndexConfig())
    assert lower is not None and lower.max_tokens == 128
    assert higher is not None and higher.max_tokens == 256


def test_the_model_tokenizer_counts_past_its_128_token_truncation():
    window = token_window(NormalizeConfig(), IndexConfig())
    assert window is not None
    assert window.count([" ".join(["word"] * 300)]) == [302]


def _figures(chunks: int, over: int, max_tokens: int, split: int) -> dict[str, object]:
    counts = dict.fromkeys(("chars", "below_min", "hard_cuts", "content_free", "enriched", "dates"), 0)
    empty: dict[str, int] = {}
    return {
        **counts,
        "chunks": [[f"c{i}", f"h{i}", 1] for i in range(chunks)],
        "split_for_window": split,
        "over_window": over,
        "max_tokens": max_tokens,
        "languages": empty,
        "tags": empty,
        "sections": empty,
    }


def test_chunk_stats_report_chunks_over_the_window():
    counts = token_counts(WINDOW, ["a " * 10, "b " * 100])
    assert counts == [12, 102]
    stats, _ = totals([_figures(1, 0, 12, 1), _figures(1, 1, 102, 2)], WINDOW)
    assert {k: stats[k] for k in ("token_window", "chunks_over_window", "chunks_split_for_window")} == {
        "token_window": {"max_tokens": 40, "tokenizer": "words"},
        "chunks_over_window": 1,
        "chunks_split_for_window": 3,
    }
    assert stats["max_embedded_tokens"] == 102
    assert "token_window" not in totals([_figures(1, 0, 0, 0)], None)[0]


@pytest.mark.parametrize("strategy", ["recursive", "by_heading", "by_paragraph", "fixed_chars"])
def test_every_strategy_output_fits_after_fitting(strategy: str):
    text = "# Title\n\n" + paragraphs(8, 30)
    spans = chunk_spans(text, [], NormalizeConfig(chunk_strategy=strategy, max_chars=2000, overlap_chars=0))
    fitted, _ = fit_spans(text, spans, WINDOW)
    assert max(words([embedded_text(s, text) for s in fitted])) <= WINDOW.max_tokens


def test_with_memos_on_token_counts_count_only_texts_not_counted_before_and_give_the_same_figures():
    from indexfoundry.storage.memo import disable_memos, enable_memos

    counted: list[str] = []

    def counting(texts: list[str]) -> list[int]:
        counted.extend(texts)
        return words(texts)

    window = TokenWindow(max_tokens=5, tokenizer="words-counted", count=counting)
    first, second = ["one two", "one two three four"], ["one two", "one two three four", "five six seven eight nine"]
    plain = token_counts(window, second)
    enable_memos()
    try:
        counted.clear()
        assert token_counts(window, first) == plain[:2]
        assert token_counts(window, second) == plain
    finally:
        disable_memos()
    assert counted == [*first, "five six seven eight nine"]  # the second call counted only the new text


def test_with_the_work_cache_token_counts_count_only_texts_no_earlier_run_counted(tmp_path):
    from indexfoundry.storage.workcache import WorkCache

    counted: list[str] = []

    def counting(texts: list[str]) -> list[int]:
        counted.extend(texts)
        return words(texts)

    window = TokenWindow(max_tokens=5, tokenizer="words-cached", count=counting)
    first, second = ["one two", "one two three four"], ["one two", "one two three four", "five six seven eight nine"]
    plain = token_counts(window, second)
    counted.clear()
    with WorkCache.for_runs(tmp_path) as cache:
        assert token_counts(window, first, cache) == plain[:2]
    with WorkCache.for_runs(tmp_path) as cache:  # another run, another process: the same cache file
        assert token_counts(window, second, cache) == plain
    assert counted == [*first, "five six seven eight nine"]
