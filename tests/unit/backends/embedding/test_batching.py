"""How the ``local`` files' texts are grouped into ONNX Runtime runs (``batching``): no model."""

from __future__ import annotations

import threading

import pytest

from indexfoundry.backends.embedding.batching import FP32_PLAN, FUSED_PLAN, run_all


def test_the_fp32_file_keeps_padding_to_multiples_of_16_so_its_vectors_do_not_change():
    assert [FP32_PLAN.padded_length(n) for n in (1, 16, 17, 100, 256)] == [16, 16, 32, 112, 256]


def test_the_int8_file_runs_a_long_text_at_its_own_length_and_pads_only_short_ones():
    assert [FUSED_PLAN.padded_length(n) for n in (3, 40, 64, 65, 201, 256)] == [16, 48, 64, 65, 201, 256]


def test_a_run_holds_texts_of_one_padded_length_within_the_token_budget_longest_first():
    lengths = [256, 10, 201, 12, 256, 30, 5, 256] + [20] * 100
    runs = FUSED_PLAN.runs(lengths)
    assert sorted(row for _, rows in runs for row in rows) == list(range(len(lengths)))
    for length, rows in runs:
        assert {FUSED_PLAN.padded_length(lengths[r]) for r in rows} == {length}
        assert len(rows) * length <= max(length, FUSED_PLAN.max_tokens) and len(rows) <= FUSED_PLAN.max_texts
    assert [length for length, _ in runs] == sorted((length for length, _ in runs), reverse=True)
    # Long texts run one per run; the 16-token bucket batches the short ones together.
    assert [rows for length, rows in runs if length == 256] == [[0], [4], [7]]
    assert max(len(rows) for length, rows in runs if length == 32) == 32


def test_runs_side_by_side_do_every_run_once_and_raise_the_first_failure():
    seen: list[int] = []
    lock = threading.Lock()

    def work(item: tuple[int, list[int]]) -> None:
        with lock:
            seen.extend(item[1])

    run_all(work, [(16, [i]) for i in range(20)], workers=3)
    assert sorted(seen) == list(range(20))

    def fail(item: tuple[int, list[int]]) -> None:
        raise ValueError(item[1][0])

    with pytest.raises(ValueError):
        run_all(fail, [(16, [1]), (16, [2])], workers=2)
