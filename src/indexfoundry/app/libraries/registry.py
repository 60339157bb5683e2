"""The libraries one server serves, from ``--library`` flags and/or a ``libraries.yaml``.

The file is re-read whenever it changes (checked on every call): a library or version removed
from it is no longer listed, searched or read. Remote libraries are refreshed in a background
thread (``start_refreshing``).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from indexfoundry.app.libraries.entries import LibraryEntry, read_libraries_file
from indexfoundry.app.libraries.library import DEFAULT_REFRESH_S, Library
from indexfoundry.app.libraries.versions import pick_version, version_order
from indexfoundry.errors import ConfigInvalid, IndexFoundryError, NotFound

log = logging.getLogger("indexfoundry.libraries")


class LibraryRegistry:
    """The libraries a server serves: from ``--library`` flags and/or a ``libraries.yaml``."""

    def __init__(
        self,
        runs_dir: Path,
        entries: list[LibraryEntry] | None = None,
        file: Path | None = None,
        *,
        embedding_model: str = "local",
        embedder: Any = None,
        refresh_interval_s: float = DEFAULT_REFRESH_S,
    ) -> None:
        self.runs_dir = runs_dir
        self.refresh_interval_s = refresh_interval_s
        self._stop = threading.Event()
        self._refresher: threading.Thread | None = None
        self.fixed = list(entries or [])
        self.file = file.resolve() if file is not None else None
        self.embedding_model = embedding_model
        self.embedder = embedder
        self._stamp: tuple[int, int] | None = None
        self._libraries: dict[tuple[str, str], Library] = {}
        self._lock = threading.Lock()
        self._reload(force=True)

    def _reload(self, force: bool = False) -> None:
        stamp = None
        if self.file is not None:
            try:
                info = self.file.stat()
            except OSError:
                raise ConfigInvalid(f"libraries file {self.file} is missing", suggestion="Restore it") from None
            stamp = (info.st_mtime_ns, info.st_size)
        if not force and stamp == self._stamp:
            return
        entries = [*self.fixed, *(read_libraries_file(self.file) if self.file is not None else [])]
        wanted: dict[tuple[str, str], LibraryEntry] = {}
        for entry in entries:
            key = (entry.name, entry.version)
            if key in wanted:
                raise ConfigInvalid(
                    f"library {entry.name}@{entry.version} is listed twice", suggestion="Keep one entry per version"
                )
            wanted[key] = entry
        if not wanted:
            raise ConfigInvalid("no libraries to serve", suggestion="Add --library NAME@VERSION=TARGET or entries")
        current = self._libraries
        kept: dict[tuple[str, str], Library] = {}
        for key, entry in wanted.items():
            old = current.get(key)
            if old is not None and old.entry == entry:
                kept[key] = old
            else:
                kept[key] = Library(
                    entry,
                    self.runs_dir,
                    self.embedding_model,
                    self.embedder,
                    refresh_interval_s=self.refresh_interval_s,
                )
        for key, old in current.items():
            if kept.get(key) is not old:
                old.stop()  # removed (or re-pointed): nothing of it is served any more
        self._libraries = kept
        self._stamp = stamp

    def libraries(self) -> list[Library]:
        """Every served library version, by name then version (newest first)."""
        with self._lock:
            self._reload()
            items = list(self._libraries.values())
        by_name = sorted(items, key=lambda lib: version_order(lib.version), reverse=True)
        return sorted(by_name, key=lambda lib: lib.name)

    def names(self) -> list[str]:
        return sorted({lib.name for lib in self.libraries()})

    def resolve(self, name: str, version: str | None) -> Library:
        """The library version ``name``/``version`` names (see :func:`pick_version`)."""
        candidates = [lib for lib in self.libraries() if lib.name == name]
        if not candidates:
            raise NotFound(
                f"no library '{name}' on this server",
                suggestion="Libraries: " + ", ".join(self.names()) + " (call list_libraries)",
            )
        chosen = pick_version([lib.version for lib in candidates], version)
        if chosen is None:
            raise NotFound(
                f"library '{name}' has no version matching '{version}'",
                suggestion="Versions: " + ", ".join(lib.version for lib in candidates),
            )
        return next(lib for lib in candidates if lib.version == chosen)

    def latest_each(self, version: str | None = None) -> list[Library]:
        """For each library, the version ``version`` picks (libraries without a match left out)."""
        out = []
        for name in self.names():
            try:
                out.append(self.resolve(name, version))
            except NotFound:
                continue
        return out

    # ------------------------------------------------------------- background refresh
    def refresh_due(self, now: float | None = None) -> list[str]:
        """Refresh every remote library whose interval has passed; the labels refreshed."""
        done = []
        for lib in self.libraries():
            if self._stop.is_set():
                break
            if not lib.refresh_due(now):
                continue
            try:
                lib.refresh()
                done.append(lib.label)
            except IndexFoundryError as error:
                log.warning("refresh of %s failed: %s", lib.label, error.one_line())
        return done

    def start_refreshing(self) -> None:
        """Check remote libraries in the background (a thread; ``stop`` ends it)."""
        if self._refresher is not None:
            return
        self._stop.clear()
        self._refresher = threading.Thread(
            target=self._refresh_loop, name="indexfoundry-libraries-refresh", daemon=True
        )
        self._refresher.start()

    def _tick(self) -> float:
        try:
            intervals = [lib.interval() for lib in self.libraries() if lib.interval() > 0]
        except IndexFoundryError:
            intervals = []  # the libraries file is unreadable for now: look again later
        return max(0.2, min(60.0, min(intervals, default=self.refresh_interval_s or 240.0) / 4))

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self._tick()):
            try:
                self.refresh_due()
            except Exception:  # keep refreshing whatever one round did
                log.exception("refreshing libraries failed")

    def stop(self) -> None:
        self._stop.set()
        if self._refresher is not None:
            self._refresher.join(timeout=30)
            self._refresher = None
        with self._lock:
            for lib in self._libraries.values():
                lib.stop()
