"""Hybrid search's two legs in one query: the query's embedding and the keyword leg.

What can overlap is the query's embedding — ONNX Runtime's session or an API call, both
outside the GIL for most of their time — with BM25 scoring in the calling thread. The
embedding goes to a second thread only when the last one took long enough to pay for the
hand-off (a model, not the ``hash`` embedder: on a busy machine waking a thread costs
milliseconds). The store's search follows once the vector is there. Running the whole semantic
leg beside the whole keyword leg cost more than it saved: both spend most of their time in
Python, holding the GIL (docs/benchmarks.md, "Hybrid at 100k chunks").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

V = TypeVar("V")
K = TypeVar("K")

# A query embedding at least this long runs beside the keyword leg, on a second thread.
OVERLAP_EMBEDDING_S = 0.001


class QueryLegs:
    """Times a service's query embeddings and runs hybrid's embedding and keyword leg."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self.embed_seconds = 0.0

    def embed(self, embed: Callable[[], V]) -> V:
        """``embed()``, its time noted (it decides whether the next hybrid query overlaps)."""
        start = time.perf_counter()
        vector = embed()
        self.embed_seconds = time.perf_counter() - start
        return vector

    def both(self, embed: Callable[[], V], keyword: Callable[[], K]) -> tuple[V, K]:
        """The query's vector (``embed``, timed) and the keyword leg's ranking (``keyword``)."""
        if self.embed_seconds < OVERLAP_EMBEDDING_S:
            return self.embed(embed), keyword()
        future = self._pool().submit(self.embed, embed)
        try:
            lexical = keyword()
        finally:
            vector = future.result()
        return vector, lexical

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hybrid-query-vector")
            return self._executor

    def close(self) -> None:
        """Stop the embedding thread (if one was started)."""
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
