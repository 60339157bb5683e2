"""Slow imports done ahead of the phase that needs them.

When a phase hands files to its workers and waits for them (extract: the fork server's start,
then the extraction), this process's core is idle; a background thread then imports the modules
the later phases will use (``Phase.background_imports``: chromadb and bm25s for the index phase),
so that the index phase of a small edit does not spend its first second importing them. A run
that extracts nothing (an unchanged rerun, or every file copied from the run it follows) starts
no thread: its phases import what they need as before, with no thread taking the GIL from them.

The thread only imports; a module that fails to import is left to the phase that needs it, which
imports it again and reports the error. The runner joins the thread before it returns.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Iterable


class Preload:
    """At most one background thread importing modules, per pipeline execution."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self, modules: Iterable[str]) -> None:
        """Import ``modules`` (in order) on a background thread, unless one was started or all are imported."""
        if self._thread is not None:
            return
        names = [name for name in dict.fromkeys(modules) if name not in sys.modules]
        if not names:
            return
        self._thread = threading.Thread(target=_import_all, args=(names,), name="indexfoundry-preload", daemon=True)
        self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


def _import_all(names: list[str]) -> None:
    for name in names:
        # Any failure (a missing extra, a broken install) is the phase's to report, when it imports.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
