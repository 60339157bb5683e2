"""The served run: one fully loaded search service, swapped atomically when a newer run completes.

A request reads ``holder.current`` once and uses that service to the end, so it never sees a
half-loaded index: a replacement is built and warmed (every offered search mode answers a
query) before the reference is swapped. When serving ``latest``, a watcher thread checks for a
newer completed run every ``reload_interval_s`` seconds.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from indexfoundry.errors import IndexFoundryError, RunNotFound
from indexfoundry.models.retrieval import SearchRequest
from indexfoundry.pipeline.inuse import mark_in_use, release
from indexfoundry.pipeline.runs import latest_run
from indexfoundry.retrieval.service import SearchService, open_service
from indexfoundry.storage.layout import RunLayout

log = logging.getLogger("indexfoundry.http")

INUSE_KIND = "serve"


def warm(service: SearchService) -> SearchService:
    """Load everything a search needs (store, chunks, embedder, keyword index) before serving."""
    for mode in service.profile.retrieval_config.search_modes:
        service.search(SearchRequest(query="warm up", top_k=1, mode=mode))
    return service


class ServiceHolder:
    """Holds the search service of the served run (a named run, or the latest completed one)."""

    def __init__(
        self,
        runs_dir: Path,
        run_id: str,
        *,
        reload_interval_s: float = 2.0,
        opener: Callable[[RunLayout], SearchService] | None = None,
    ) -> None:
        self.runs_dir = runs_dir
        self.run_spec = run_id
        self.follow_latest = run_id == "latest"
        self.reload_interval_s = reload_interval_s
        self._open = opener or (lambda layout: warm(open_service(layout)))
        self._current: SearchService | None = None
        self._swap_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: IndexFoundryError | None = None
        self.reloads = 0

    @property
    def current(self) -> SearchService | None:
        """The service to use for one whole request (read once per request)."""
        return self._current

    def _wanted_run(self) -> str | None:
        if self.follow_latest:
            return latest_run(self.runs_dir)
        return self.run_spec

    def refresh(self) -> bool:
        """Load the wanted run if it is not the one served; True if a new service was swapped in."""
        wanted = self._wanted_run()
        current = self._current
        if wanted is None or (current is not None and current.run_id == wanted):
            return False
        layout = RunLayout.existing(self.runs_dir, wanted)
        service = self._open(layout)  # fully built and warmed before anyone can see it
        with self._swap_lock:
            old = self._current
            mark_in_use(self.runs_dir, service.run_id, INUSE_KIND, os.getpid())
            self._current = service
            self.reloads += 1
        if old is not None and old.run_id != service.run_id:
            release(self.runs_dir, old.run_id, INUSE_KIND, os.getpid())
        log.info("serving run %s", service.run_id)
        return True

    def load_initial(self) -> None:
        """First load: a named run must load (its error is raised); 'latest' may wait for a run."""
        try:
            self.refresh()
        except IndexFoundryError as error:
            if not self.follow_latest:
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
        self.load_initial()
        if self.follow_latest and self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="indexfoundry-reload", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop watching and release the in-use mark."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        current = self._current
        if current is not None:
            release(self.runs_dir, current.run_id, INUSE_KIND, os.getpid())
