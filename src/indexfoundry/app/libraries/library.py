"""One served library version: how its run is found, built, and kept fresh.

A version is served from a *target*: a run id (served as is), a pipeline config file (built with
``pipeline_run``, a completed run of the same config reused, rebuilt on the previous run as base
when the file changes), or a docs folder (docs mode: built, reused and kept fresh as ``--docs``
does). A config whose sources are fetched or read from git is rebuilt every
``refresh_interval_s`` on the served run as base (see the package's docstring).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexfoundry.app import runs as api
from indexfoundry.app.docs_index import DocsIndex, newest_run_of_config
from indexfoundry.app.libraries.entries import LibraryEntry
from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.config import FolderSource, PdfSource, PipelineConfig
from indexfoundry.pipeline.cleanup import discard_run
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import RunLayout, is_run_id
from indexfoundry.storage.manifest import frozen_config, load_manifest

log = logging.getLogger("indexfoundry.libraries")

DEFAULT_REFRESH_S = 3600.0


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


@dataclass
class Library:
    """One served library version and how its run is found."""

    entry: LibraryEntry
    runs_dir: Path
    embedding_model: str
    embedder: Any = None
    progress: Any = None
    refresh_interval_s: float = DEFAULT_REFRESH_S
    _run_id: str | None = None
    _config_stamp: tuple[int, int] | None = None
    _docs: DocsIndex | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Held while a refresh builds (queries keep answering from the served run meanwhile).
    _refreshing: threading.Lock = field(default_factory=threading.Lock)
    # Wall-clock time the served run's sources were last read (its completion, or a refresh).
    checked_at: float | None = None
    refreshes: int = 0

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def version(self) -> str:
        return self.entry.version

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def run_id(self) -> str:
        """The run serving this version (built on first use for a config or a folder)."""
        with self._lock:
            target = self.entry.source
            if is_run_id(target):
                RunLayout.existing(self.runs_dir, target)
                return target
            path = Path(target)
            if path.is_dir():
                if self._docs is None:
                    self._docs = DocsIndex(
                        path, self.runs_dir, embedding_model=self.embedding_model, embedder=self.embedder
                    )
                return self._docs.ensure_fresh()
            stamp = _stamp(path)
            if self._run_id is None or stamp != self._config_stamp:
                # First use, or the config file changed: build (incrementally on the last run).
                self._run_id = self._build(path, base=self._run_id)
                self._config_stamp = stamp
                self.checked_at = _completed_at(self.runs_dir, self._run_id)
            return self._run_id

    # ------------------------------------------------------------- keeping remote sources fresh
    def interval(self) -> float:
        value = self.entry.refresh_interval_s
        return self.refresh_interval_s if value is None else value

    def remote(self) -> bool:
        """Served from a config whose sources are fetched or read from git (they change unseen)."""
        target = self.entry.source
        if is_run_id(target) or not Path(target).is_file():
            return False
        try:
            config = api.load_config(Path(target))
        except IndexFoundryError:
            return False
        return has_remote_sources(config)

    def refresh_due(self, now: float | None = None) -> bool:
        interval = self.interval()
        if interval <= 0 or self._run_id is None or self.checked_at is None:
            return False
        return (now if now is not None else time.time()) - self.checked_at >= interval

    def refresh(self) -> str | None:
        """Rebuild on the served run as base; serve the new run if its content changed.

        Returns the new run id, or None when nothing changed (the new run is discarded) or the
        library is not a remote config. A failed refresh raises and leaves the served run.
        """
        with self._refreshing:
            current = self._run_id
            if current is None or not self.remote():
                return None
            config = api.load_config(Path(self.entry.source))
            out = api.pipeline_run(config, runs_dir=self.runs_dir, embedder=self.embedder, base=current)
            self.checked_at = time.time()
            self.refreshes += 1
            if out.status not in ("completed", "partial"):
                raise IndexFoundryError(
                    f"refreshing library {self.label} failed (run {out.run_id}); still serving run {current}",
                    code="INTERNAL_ERROR",
                    recoverable=True,
                    suggestion=f"See 'indexfoundry run status {out.run_id}'",
                )
            if same_content(self.runs_dir, current, out.run_id):
                discard_run(self.runs_dir, out.run_id)
                return None
            with self._lock:
                if self._run_id != current:  # the config file changed meanwhile: that build wins
                    return None
                self._run_id = out.run_id
            log.info("library %s refreshed: run %s replaces %s", self.label, out.run_id, current)
            return out.run_id

    def _build(self, path: Path, base: str | None = None) -> str:
        if not path.is_file():
            raise ConfigInvalid(
                f"library {self.label}: '{path}' is not a run id, a config file or a folder",
                suggestion="Pass a run id of the runs folder, a pipeline config file or a docs folder",
            )
        config = api.load_config(path)
        previous = newest_run_of_config(self.runs_dir, sha256_json(frozen_config(config)))
        if previous is not None:
            return previous
        if base is not None:
            out = api.pipeline_run(config, runs_dir=self.runs_dir, embedder=self.embedder, base=base)
            if out.status in ("completed", "partial"):
                return out.run_id
        out = api.pipeline_run(config, runs_dir=self.runs_dir, embedder=self.embedder, progress=self.progress)
        if out.status not in ("completed", "partial"):
            raise IndexFoundryError(
                f"building library {self.label} from {path} failed (run {out.run_id})",
                code="INTERNAL_ERROR",
                recoverable=True,
                suggestion=f"See 'indexfoundry run status {out.run_id}'",
            )
        return out.run_id

    def stop(self) -> None:
        if self._docs is not None:
            self._docs.stop()


def has_remote_sources(config: PipelineConfig) -> bool:
    """True if a source of ``config`` is fetched or read from git (not a folder or a local PDF)."""
    for source in config.connect.sources:
        if isinstance(source, FolderSource):
            continue
        if isinstance(source, PdfSource) and "://" not in source.source:
            continue
        return True
    return False


def _completed_at(runs_dir: Path, run_id: str) -> float | None:
    from datetime import datetime

    try:
        manifest = load_manifest(RunLayout(runs_dir / run_id))
    except (IndexFoundryError, OSError, ValueError):
        return None
    stamp = manifest.completed_at or manifest.created_at
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def same_content(runs_dir: Path, one: str, two: str) -> bool:
    """Two runs hold the same documents, chunks and index (by the phases' output hashes)."""
    try:
        first = load_manifest(RunLayout(runs_dir / one)).phases
        second = load_manifest(RunLayout(runs_dir / two)).phases
    except (IndexFoundryError, OSError, ValueError):
        return False
    for phase in ("extract", "normalize", "index"):
        a, b = first.get(phase), second.get(phase)
        if a is None or b is None or a.outputs != b.outputs or a.status != b.status:
            return False
    return first["index"].fingerprint == second["index"].fingerprint
