"""Hybrid search's two legs in one query: the semantic leg (the query's embedding, then the
store's nearest vectors) and the keyword leg (BM25).

Most of the semantic leg runs outside the GIL — ONNX Runtime's session or an API call for the
embedding, the store's own search (embedded Chroma's Rust core, a server's network round trip,
numpy's matrix product) — so it runs on a second thread while the keyword leg runs on the
caller's, and hybrid costs little more than the semantic leg. That way round the caller starts
its own work at once; the other way round (the keyword leg handed to a thread that must wake
and take the GIL while the semantic leg's Python parts hold it) overlapped far less. Waking a
thread costs something too (milliseconds on a busy machine), so a leg as short as the hand-off
(a small run with the ``hash`` embedder) runs in line instead: the last semantic leg's time
decides (docs/benchmarks.md, "Hybrid at 100k chunks").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

S = TypeVar("S")
K = TypeVar("K")

# A semantic leg at least this long runs on a second thread, beside the keyword leg.
OVERLAP_SEMANTIC_S = 0.001
# Threads for semantic legs at most, started as concurrent queries need them: as many as the HTTP
# server's request threads (anyio's default limit for sync endpoints), so that concurrent hybrid
# queries never wait in line for a thread (a server store's round trips overlap as before).
SEMANTIC_THREADS = 40


class QueryLegs:
    """Runs hybrid's semantic leg (timed) and keyword leg, side by side when that pays."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self.semantic_seconds = 0.0

    def semantic(self, leg: Callable[[], S]) -> S:
        """``leg()``, its time noted (it decides whether the next hybrid query overlaps)."""
        start = time.perf_counter()
        result = leg()
        self.semantic_seconds = time.perf_counter() - start
        return result

    def both(self, semantic: Callable[[], S], keyword: Callable[[], K]) -> tuple[S, K]:
        """The semantic leg's result (timed) and the keyword leg's."""
        if self.semantic_seconds < OVERLAP_SEMANTIC_S:
            return self.semantic(semantic), keyword()
        # The semantic leg on the second thread (timed there), the keyword leg here at once.
        nearest = self._pool().submit(self.semantic, semantic)
        try:
            words = keyword()
        finally:
            found = nearest.result()
        return found, words

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=SEMANTIC_THREADS, thread_name_prefix="hybrid-semantic")
            return self._executor

    def close(self) -> None:
        """Stop the keyword thread (if one was started)."""
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
