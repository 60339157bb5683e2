"""Zero-config docs mode: ``indexfoundry mcp --docs FOLDER``.

- First start: builds a run over the folder with the defaults (its documents: markdown, text,
  reStructuredText, HTML, PDF and Word files; ``by_heading`` chunks, the local embedding model
  unless ``--embedding-model`` says otherwise), progress on stderr.
- Later starts: reuse the newest run built from the same config if the folder still has the
  same files with the same contents (checked by SHA-256 against the run's raw manifest).
- While serving: a watchfiles thread refreshes the index when files change, and every query
  checks the folder first (a cheap stat snapshot; a change triggers the content check).
- A refresh is a new run derived from the previous one (``api.pipeline_run(..., base=...)``):
  unchanged files are not extracted again and unchanged chunks are never embedded again (the
  runs folder's embedding cache); deleted files drop out with their chunks. Without ``base``
  support in the api the previous run is rerun in place, which has the same effect.
- One local executor for the index's lifetime: its limited worker processes (extraction and
  chunking of the changed files) are started once and reused by every refresh.
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexfoundry.app import runs as api
from indexfoundry.app.docs_build import FirstBuild
from indexfoundry.errors import IndexFoundryError, RunLocked
from indexfoundry.models.config import FolderSource, PipelineConfig
from indexfoundry.models.manifests import PipelineRunOutput
from indexfoundry.phases.executor import LocalExecutor
from indexfoundry.pipeline.runner import new_run_id
from indexfoundry.pipeline.runs import list_runs
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import frozen_config, load_manifest
from indexfoundry.storage.memo import enable_memos

log = logging.getLogger("indexfoundry.mcp.docs")

ENV_EMBEDDING_MODEL = "INDEXFOUNDRY_EMBEDDING_MODEL"

Snapshot = frozenset[tuple[str, int, int]]


def default_docs_runs_dir() -> Path:
    """Where docs mode keeps runs when no runs folder is given: the user's cache folder."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "indexfoundry" / "runs"


# What docs mode reads as pages: documents by their name. Files a docs folder holds beside them
# (CNAME, images, stylesheets, scripts, data and config files) are not pages.
DOCUMENT_SUFFIXES = ("md", "markdown", "mdown", "mdx", "rst", "txt", "text", "html", "htm", "xhtml", "pdf", "docx")
DOCUMENTS_GLOB = "**/*.{" + ",".join(s for suffix in DOCUMENT_SUFFIXES for s in (suffix, suffix.upper())) + "}"


def docs_config(folder: Path, runs_dir: Path, embedding_model: str = "local") -> PipelineConfig:
    """The docs-mode pipeline config: the documents of ``folder`` (``DOCUMENT_SUFFIXES``),
    chunked by heading."""
    source: dict[str, Any] = {"type": "folder", "path": str(folder), "glob": DOCUMENTS_GLOB}
    try:
        inside = runs_dir.resolve().relative_to(folder)
    except ValueError:
        inside = None
    if inside is not None and str(inside) != ".":
        source["exclude_patterns"] = [f"{inside.as_posix()}/**"]
    return api.load_config(
        {
            "connect": {"sources": [source]},
            "normalize": {"chunk_strategy": "by_heading"},
            "index": {"embedding_model": embedding_model},
        }
    )


def supports_base() -> bool:
    """True if ``api.pipeline_run`` can derive a new run from a base run."""
    return "base" in inspect.signature(api.pipeline_run).parameters


def newest_run_of_config(runs_dir: Path, config_hash: str) -> str | None:
    """Newest completed (or partial) run of ``runs_dir`` built from the config with this hash."""
    for item in list_runs(runs_dir, limit=100_000):
        if item.status not in ("completed", "partial"):
            continue
        try:
            manifest = load_manifest(RunLayout(runs_dir / item.run_id))
        except (IndexFoundryError, OSError, ValueError):
            continue
        index = manifest.phases.get("index")
        if manifest.config_hash == config_hash and index is not None and index.status == "completed":
            return item.run_id
    return None


class DocsIndex:
    """Keeps one up-to-date run over a docs folder."""

    def __init__(
        self,
        folder: Path,
        runs_dir: Path,
        *,
        embedding_model: str = "local",
        embedder: Any = None,
        progress: Any = None,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        # Refreshes rebuild the run in this process: per-document chunking, language detection
        # and BM25 tokenization are memoized, so an edit costs the changed file (storage/memo.py).
        enable_memos()
        self.folder = folder.resolve()
        self.runs_dir = runs_dir
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.config = docs_config(self.folder, runs_dir, embedding_model)
        self.source: FolderSource = self.config.connect.sources[0]  # type: ignore[assignment]
        self.config_hash = sha256_json(frozen_config(self.config))
        self.embedder = embedder
        self.progress = progress
        self.on_change = on_change
        resolved_runs = runs_dir.resolve()
        # A runs folder inside the docs folder is neither indexed nor watched.
        self._skip: Path | None = resolved_runs if self.folder in resolved_runs.parents else None
        self.run_id: str | None = None
        self._snapshot: Snapshot | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self.refreshes = 0
        # Set while a build runs (monotonic start time): queries meanwhile answer from the
        # previous run and say how stale it is, instead of waiting for the build.
        self._building_since: float | None = None
        self._first: FirstBuild | None = None
        # Cleared while a background build (start_build) has not yet either found the folder's
        # run or begun a first build: queries wait for that moment instead of racing the build
        # for the index lock (which would make them wait for the whole first build).
        self._settled = threading.Event()
        self._settled.set()
        self._locked: set[str] = set()  # unfinished runs another server holds
        # One executor for the server's lifetime: its pool of limited worker processes (extract
        # and normalize jobs) stays warm between refreshes; closed by stop().
        self.executor = LocalExecutor()

    # ------------------------------------------------------------- state of the folder
    def snapshot(self) -> Snapshot:
        """(path, size, mtime) of every file under the folder: cheap change detection."""
        out: set[tuple[str, int, int]] = set()
        for dirpath, dirnames, filenames in os.walk(self.folder):
            dirnames[:] = [
                d for d in dirnames if not d.startswith(".") and (self._skip is None or Path(dirpath, d) != self._skip)
            ]
            for name in filenames:
                if name.startswith("."):
                    continue
                path = Path(dirpath) / name
                try:
                    info = path.stat()
                except OSError:
                    continue
                out.add((str(path), info.st_size, info.st_mtime_ns))
        return frozenset(out)

    def _folder_hashes(self) -> dict[str, str]:
        from indexfoundry.phases.connect.folder import scan_folder

        return {f.uri: f.sha256 for f in scan_folder(self.source).files}

    def _run_hashes(self, run_id: str) -> dict[str, str] | None:
        layout = RunLayout(self.runs_dir / run_id)
        if not layout.raw_manifest.is_file():
            return None
        return {row["uri"]: row["sha256"] for row in iter_jsonl(layout.raw_manifest)}

    def _matches_folder(self, run_id: str) -> bool:
        return self._run_hashes(run_id) == self._folder_hashes()

    def find_previous(self) -> str | None:
        """Newest usable run built from this folder's config."""
        return newest_run_of_config(self.runs_dir, self.config_hash)

    # ------------------------------------------------------------- building
    def _build(self, base: str | None) -> str:
        kwargs: dict[str, Any] = {
            "runs_dir": self.runs_dir,
            "progress": self.progress,
            "embedder": self.embedder,
            "opened_executor": self.executor,
        }
        if base is None:
            return self._first_build(kwargs)
        if supports_base():
            # The folder is the truth in docs mode: deleting pages is not a shrink to refuse.
            out = api.pipeline_run(self.config, base=base, allow_shrink=True, **kwargs)
        else:
            out = api.pipeline_run(self.config, run_id=base, **kwargs)
        return self._built(out)

    def _first_build(self, kwargs: dict[str, Any]) -> str:
        """A build with no earlier run to answer from: searches meanwhile read what it has
        committed (``first_build``), its progress fanned out to them."""
        run_id = self.unfinished_run() or new_run_id()
        build = FirstBuild(RunLayout(self.runs_dir / run_id), self.folder.name, self.progress, self.embedder)
        self._first = build
        self._settled.set()
        try:
            return self._built(api.pipeline_run(self.config, run_id=run_id, **{**kwargs, "progress": build}))
        except RunLocked:
            self._locked.add(run_id)  # another server is building it: the next attempt starts a new run
            raise
        finally:
            build.finish()
            self._first = None

    def unfinished_run(self) -> str | None:
        """The newest run of this folder's config that did not complete (a server stopped during
        its first build): continued in place, its finished phases kept, its vectors cached."""
        for item in list_runs(self.runs_dir, limit=100_000):
            if item.status not in ("failed", "running") or item.run_id in self._locked:
                continue
            try:
                manifest = load_manifest(RunLayout(self.runs_dir / item.run_id))
            except (IndexFoundryError, OSError, ValueError):
                continue
            if manifest.config_hash == self.config_hash:
                return item.run_id
        return None

    def first_build(self) -> FirstBuild | None:
        """The first build under way, if one is (queries may answer from what it has indexed)."""
        self._settled.wait()
        return self._first

    def _built(self, out: PipelineRunOutput) -> str:
        if out.status == "failed":
            raise IndexFoundryError(
                f"indexing {self.folder} failed (run {out.run_id})",
                code="INTERNAL_ERROR",
                recoverable=True,
                suggestion=f"See 'indexfoundry run status {out.run_id}'",
            )
        log.info("docs run %s %s (%d chunks)", out.run_id, out.status, out.summary.chunks_indexed)
        return out.run_id

    def _set_current(self, run_id: str) -> None:
        previous = self.run_id
        self.run_id = run_id
        _mark(self.runs_dir, run_id, previous)
        if previous is not None and previous != run_id and self.on_change is not None:
            self.on_change(run_id)

    def ensure_fresh(self) -> str:
        """The current run id, refreshing the index first if the folder changed."""
        with self._lock:
            snap = self.snapshot()
            if self.run_id is not None and snap == self._snapshot:
                return self.run_id
            candidate = self.run_id or self.find_previous()
            if candidate is not None and self._matches_folder(candidate):
                self._set_current(candidate)
                self._snapshot = snap
                return candidate
            self._building_since = time.monotonic()
            try:
                for attempt in range(3):
                    try:
                        built = self._build(candidate)
                        break
                    except RunLocked:
                        # Another server refreshes the same run in place: build a fresh run instead.
                        if attempt == 2:
                            raise
                        candidate = None
            finally:
                self._building_since = None
            self.refreshes += 1
            self._set_current(built)
            self._snapshot = snap
            return built

    def default_run(self) -> str:
        """The run to answer from. While a (re)build runs, the previous run answers at once (a
        query never waits for a rebuild when there is something to serve); only the very first
        build over a folder with no earlier run is waited for."""
        self._settled.wait()
        if self._lock.acquire(blocking=False):
            try:
                return self.ensure_fresh()
            finally:
                self._lock.release()
        stale = self.run_id or self.find_previous()
        return stale if stale is not None else self.ensure_fresh()

    def stale_note(self, run_id: str) -> str | None:
        """How stale an answer from ``run_id`` is, while a rebuild is under way."""
        since = self._building_since
        if since is None:
            return None
        first = self._first
        if first is not None and first.run_id == run_id:
            return first.note()
        return (
            f"The index of {self.folder.name} is being rebuilt after a change (for {time.monotonic() - since:.0f}s); "
            f"this answer is from the previous run {run_id} and may miss the latest edits."
        )

    def start_build(self, name: str = "indexfoundry-docs-build") -> threading.Thread:
        """Find or build the folder's run in a background thread (a server's start). Until that
        build has found a run or begun a first build, ``first_build`` and ``default_run`` wait,
        so a query arriving at once answers from the first build instead of starting its own."""
        self._settled.clear()

        def build() -> None:
            try:
                log.info("serving docs run %s", self.ensure_fresh())
            except IndexFoundryError as error:
                log.error("indexing %s failed: %s", self.folder, error.one_line())
            finally:
                self._settled.set()

        thread = threading.Thread(target=build, name=name, daemon=True)
        thread.start()
        return thread

    # ------------------------------------------------------------- watching
    def start_watching(self) -> None:
        """Refresh in the background when files change (watchfiles)."""
        if self._watcher is not None:
            return
        self._stop.clear()
        self._watcher = threading.Thread(target=self._watch, name="indexfoundry-docs-watch", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        import watchfiles

        default = watchfiles.DefaultFilter()
        skip = str(self._skip) if self._skip is not None else None

        def wanted(change: Any, path: str) -> bool:
            return bool(default(change, path)) and (skip is None or not path.startswith(skip))

        try:
            for _changes in watchfiles.watch(
                self.folder, watch_filter=wanted, stop_event=self._stop, raise_interrupt=False
            ):
                try:
                    self.ensure_fresh()
                except IndexFoundryError as error:
                    log.warning("refresh after a change failed: %s", error.one_line())
                except Exception:  # keep watching whatever one refresh did
                    log.exception("refresh after a change failed")
        except (OSError, RuntimeError) as exc:
            log.warning("watching %s stopped: %s (queries still check for changes)", self.folder, exc)

    def stop(self) -> None:
        """Stop watching, close the executor (its worker processes) and release the served run."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
            self._watcher = None
        self.executor.close()  # a refresh under way stops its workers when it ends
        if self.run_id is not None:
            _release(self.runs_dir, self.run_id)


def _mark(runs_dir: Path, run_id: str, previous: str | None) -> None:
    """Mark the served run in use so 'run cleanup' keeps it (when in-use marks exist)."""
    try:
        from indexfoundry.pipeline.inuse import mark_in_use, release
    except ImportError:
        return
    mark_in_use(runs_dir, run_id, "mcp")
    if previous is not None and previous != run_id:
        release(runs_dir, previous, "mcp")


def _release(runs_dir: Path, run_id: str) -> None:
    try:
        from indexfoundry.pipeline.inuse import release
    except ImportError:
        return
    release(runs_dir, run_id, "mcp")
