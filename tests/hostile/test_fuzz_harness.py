"""The fuzz harness keeps working: each target runs a few seconds on the shared corpora without a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.fuzz.harness import SEED_GLOBS, fuzz, mutate


def test_mutations_are_deterministic_and_stay_bytes():
    ops = [(0, 3, 1, b""), (1, 1, 0, b"xy"), (2, 0, 0, b"<<"), (3, 2, 5, b""), (6, 1, 3, b""), (7, 0, 2, b"")]
    assert mutate(b"hello world", b"other seed", ops) == mutate(b"hello world", b"other seed", ops)
    assert isinstance(mutate(b"", b"", ops), bytes)


@pytest.mark.parametrize("target", ["csv", "json", "headings", "chunkers"])
def test_a_short_fuzz_run_finds_no_crash(target: str, corpora: Path, tmp_path: Path):
    assert target in SEED_GLOBS
    result = fuzz(target, seconds=2, out=tmp_path / "crashes", slow=30)
    assert result["inputs"] > 0
    assert result["crashes"] == [], result["crashes"]
