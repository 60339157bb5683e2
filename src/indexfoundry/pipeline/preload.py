"""Slow imports and loads done ahead of the phase that needs them.

When a phase hands files to its workers and waits for them (extract: the fork server's start,
then the extraction), this process's core is idle; a background thread then prepares what the
later phases will use (``Phase.prepare_ahead``: for the index phase, chromadb and bm25s
imported and the local embedding model's session loaded), so that the index phase of a small
edit does not spend its first second on them. A run that extracts nothing (an unchanged rerun,
or every file copied from the run it follows) starts no thread: its phases import and load what
they need as before, with no thread taking the GIL from them.

The thread only imports modules and runs loaders that fill a process cache the phase reads
again (the embedder's session cache); anything that fails is left to the phase that needs it,
which does it again and reports the error. The runner joins the thread before it returns.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable, Iterable

# What a phase has prepared ahead: a module to import, or a loader to run.
Ahead = str | Callable[[], object]


class Preload:
    """At most one background thread preparing what later phases need, per pipeline execution."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self, items: Iterable[Ahead]) -> None:
        """Import the modules and run the loaders of ``items`` (in order) on a background thread,
        unless one was started or there is nothing to do (every module already imported)."""
        if self._thread is not None:
            return
        todo = [item for item in dict.fromkeys(items) if callable(item) or item not in sys.modules]
        if not todo:
            return
        self._thread = threading.Thread(target=_prepare_all, args=(todo,), name="indexfoundry-preload", daemon=True)
        self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


def _prepare_all(items: list[Ahead]) -> None:
    for item in items:
        # Any failure (a missing extra, a broken install, a model file not made yet) is the
        # phase's to report, when it does the same.
        with contextlib.suppress(Exception):
            if callable(item):
                item()
            else:
                importlib.import_module(item)
