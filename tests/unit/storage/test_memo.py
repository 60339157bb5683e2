"""Per-process memos (``storage/memo.py``): inert unless enabled, bounded LRU, cleared when disabled."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from indexfoundry.storage.memo import Memo, disable_memos, enable_memos, memos_enabled


@pytest.fixture
def memos_on() -> Iterator[None]:
    enable_memos()
    try:
        yield
    finally:
        disable_memos()


def test_a_memo_remembers_nothing_while_memos_are_off():
    disable_memos()  # docs mode turns them on for its process; tests/conftest.py turns them off after each test
    assert not memos_enabled()
    memo: Memo[int] = Memo(size=4)
    memo.put_many({"a": 1})
    assert memo.get_many(["a"]) == {}


def test_with_memos_on_only_the_keys_asked_for_and_present_come_back(memos_on: None):
    memo: Memo[int] = Memo(size=4)
    memo.put_many({"a": 1, "b": 2})
    assert memo.get_many(["b", "missing", "a"]) == {"b": 2, "a": 1}


def test_a_full_memo_drops_the_oldest_entries_first(memos_on: None):
    memo: Memo[int] = Memo(size=3)
    memo.put_many({"a": 1, "b": 2, "c": 3})
    memo.put_many({"d": 4, "e": 5})
    assert memo.get_many(["a", "b", "c", "d", "e"]) == {"c": 3, "d": 4, "e": 5}


def test_disabling_memos_empties_every_memo_so_reenabling_starts_cold(memos_on: None):
    first: Memo[str] = Memo(size=2)
    second: Memo[str] = Memo(size=2)
    first.put_many({"k": "v"})
    second.put_many({"k": "w"})
    disable_memos()
    assert not memos_enabled()
    enable_memos()
    assert first.get_many(["k"]) == {} and second.get_many(["k"]) == {}


def test_threads_writing_at_once_never_overfill_a_memo(memos_on: None):
    memo: Memo[int] = Memo(size=50)
    start = threading.Barrier(8)

    def write(worker: int) -> None:
        start.wait()
        for i in range(200):
            memo.put_many({f"{worker}-{i}": i})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every_key = [f"{w}-{i}" for w in range(8) for i in range(200)]
    assert len(memo.get_many(every_key)) == 50
