"""Python's cyclic garbage collector while a pipeline executes.

A run over a large corpus holds hundreds of thousands of small containers at once: the
previous run's documents, figures and rows read into dicts and lists, the scanned files, the
store's rows. With CPython's default thresholds (700, 10, 10) the collector runs after every
700 new containers and walks every live object again at each full collection, although the
phases make no reference cycles worth finding (reference counting frees their data): a
one-file edit of 20,000 files ran about 1,900 collections, 12 of them full, for about 1 s of
a 9-10 s run (``docs/benchmarks.md``, "Small changes at any size"). While ``execute`` runs,
the youngest generation is collected after 200,000 new containers instead (0.23-0.26 s in
the same edit with the final collection below; the process's peak memory did not change), and the thresholds the
process had are put back when the last execution in the process ends, after one full
collection of what the executions left in reference cycles. Thresholds do not
turn on a collector the process turned off (``gc.disable()`` stays in force).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

THRESHOLDS = (200_000, 30, 30)

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect less often inside the block (``THRESHOLDS``); nested or concurrent blocks (two
    runs executing on two threads of one process) put the process's own thresholds back when
    the last of them ends."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*THRESHOLDS)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            last = _depth == 0
            if last and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
        if last:
            # What the run left in reference cycles (an unclosed socket in an exception's
            # traceback, say) is collected now, when the run ends, not at some later allocation
            # in whatever the process does next.
            gc.collect()
