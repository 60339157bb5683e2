"""Per-process memos of deterministic per-item work, for long-lived processes that rebuild runs.

``indexfoundry mcp --docs`` rebuilds its run after every edit in the same process: chunking a
document, detecting a chunk's language and tokenizing a chunk for BM25 give the same result
for the same input every time, so with memos on (``enable_memos()``, which docs mode calls)
a refresh after one edit does that work for the changed file only. Off by default: a
one-shot CLI run gains nothing, and tests that patch a step must see it run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, TypeVar

V = TypeVar("V")

_enabled = threading.Event()


def enable_memos() -> None:
    _enabled.set()


def disable_memos() -> None:
    _enabled.clear()
    for memo in list(_all):
        memo.clear()


def memos_enabled() -> bool:
    return _enabled.is_set()


class Memo(Generic[V]):
    """A bounded, thread-safe LRU map from a key to a result; inert while memos are off."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()
        _all.append(self)

    def get_many(self, keys: list[str]) -> dict[str, V]:
        if not _enabled.is_set():
            return {}
        with self._lock:
            return {k: self._items[k] for k in keys if k in self._items}

    def put_many(self, items: dict[str, V]) -> None:
        if not _enabled.is_set():
            return
        with self._lock:
            self._items.update(items)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_all: list[Memo[Any]] = []
