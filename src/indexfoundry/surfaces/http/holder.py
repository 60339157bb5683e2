"""The served run: one fully loaded ``Run`` handle, swapped atomically when a newer run completes.

A request leases ``holder.current`` once (``holder.leased()``) and uses that handle to the end,
so it never sees a half-loaded index: a replacement is opened and warmed (every offered search
mode answers a query) before the reference is swapped, and the old handle is closed (its store
connection released, its in-use mark removed) once its last request has finished. When
serving ``latest``, a watcher thread checks for a newer completed run every
``reload_interval_s`` seconds.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid, IndexFoundryError, RunNotFound
from indexfoundry.models.ids import LATEST, is_latest

log = logging.getLogger("indexfoundry.http")

INUSE_KIND = "serve"


class RunHolder:
    """Holds the ``Run`` of the served run (a named run, or the latest completed one)."""

    def __init__(self, runs_dir: Path, run_id: str, *, reload_interval_s: float = 2.0, embedder: Any = None) -> None:
        self.runs_dir = runs_dir
        self.run_spec = run_id
        self.follow_latest = is_latest(run_id)
        self.reload_interval_s = reload_interval_s
        self.embedder = embedder
        self._current: api.Run | None = None
        self._swap_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: IndexFoundryError | None = None
        self.reloads = 0

    @property
    def current(self) -> api.Run | None:
        """The handle served now (None while 'latest' waits for a first completed run)."""
        return self._current

    @contextlib.contextmanager
    def leased(self) -> Iterator[api.Run | None]:
        """The current handle, kept open for the block even if a newer run is swapped in meanwhile."""
        with contextlib.ExitStack() as stack:
            with self._swap_lock:
                run = self._current
                if run is not None:
                    stack.enter_context(run.lease())
            yield run

    def _wanted_run(self) -> str | None:
        if self.run_spec == LATEST:  # the folder's one pipeline, kept once known
            self.run_spec = api.pinned_latest(self.runs_dir, LATEST)
        try:
            return api.resolve_run_id(self.runs_dir, self.run_spec)
        except RunNotFound:
            if not self.follow_latest:
                raise
            return None

    def refresh(self) -> bool:
        """Load the wanted run if it is not the one served; True if a new handle was swapped in."""
        wanted = self._wanted_run()
        current = self._current
        if wanted is None or (current is not None and current.id == wanted):
            return False
        run = api.open_run(wanted, self.runs_dir, embedder=self.embedder, in_use=INUSE_KIND)
        try:
            run.warm()  # fully loaded before anyone can see it
        except BaseException:
            run.close()
            raise
        run.follows_latest = self.follow_latest
        with self._swap_lock:
            old = self._current
            self.reloads += 1
            run.reloads = self.reloads
            self._current = run
        if old is not None:
            old.close()  # once the requests still reading it have finished
        log.info("serving run %s", run.id)
        return True

    def load_initial(self) -> None:
        """First load: a named run must load (its error is raised); 'latest' may wait for a run."""
        try:
            self.refresh()
        except IndexFoundryError as error:
            if not self.follow_latest or isinstance(error, ConfigInvalid):  # e.g. an ambiguous 'latest'
                raise
            self.last_error = error
        if self._current is None and not self.follow_latest:
            raise RunNotFound(f"run {self.run_spec} could not be loaded", suggestion="Check 'indexfoundry run list'")

    def _watch(self) -> None:
        while not self._stop.wait(self.reload_interval_s):
            try:
                self.refresh()
                self.last_error = None
            except IndexFoundryError as error:
                # Keep serving the previous run; a broken new run must not take the API down.
                self.last_error = error
                log.warning("could not load the latest run: %s", error.one_line())
            except Exception:  # the watcher thread must survive anything; the old run keeps serving
                log.exception("unexpected error while reloading the latest run")

    def start(self) -> None:
        """Load the run, and with 'latest' start watching for newer completed runs."""
        if self._current is None:
            self.load_initial()
        if self.follow_latest and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="indexfoundry-reload", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop watching and close the served handle (releasing its in-use mark)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        with self._swap_lock:
            current, self._current = self._current, None
        if current is not None:
            current.close()
