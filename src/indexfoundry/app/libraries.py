"""Many libraries, many versions, one MCP server (``--library NAME@VERSION=TARGET``, ``libraries.yaml``).

A library version is served from a *target*: a run id (served as is), a pipeline config file
(built with ``api.pipeline_run``, a completed run of the same config reused, rebuilt on the
previous run as base when the file changes), or a docs folder (docs mode: built, reused and
kept fresh as ``--docs`` does). Versions are compared with
``packaging``'s PEP 440 rules; a version that is not PEP 440 only matches exactly and sorts
below the others. A version query is an exact version, ``latest``, ``18.x`` / ``18.*``, or a
range (``>=18 <19``, ``>=18,<19``, ``~=18.2``), and picks the highest match.

With a ``libraries.yaml``, the file is re-read whenever it changes (checked on every call):
a library or version removed from it is no longer listed, searched or read.

Remote libraries are kept fresh: a config whose sources are fetched (url, sitemap, crawl,
llms_txt, a remote PDF) or read from git (repo) is rebuilt every ``refresh_interval_s``
(default one hour; per entry in ``libraries.yaml``) as a run on the served run
(``--base``): pages are revalidated with conditional requests (ETag / Last-Modified, 304s
download nothing), unchanged documents are not extracted or embedded again, pages that now
answer 404/410 or left the sitemap are gone from the new run. The new run replaces the served
one at once (queries meanwhile answer from the old run); a refresh that finds nothing new is
discarded, so the served run and its cursors stay the same, and a refresh that fails (or that
the shrink guard refuses) leaves the served run as it is.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import Field, ValidationError

from indexfoundry.app import runs as api
from indexfoundry.app.docs_index import DocsIndex, newest_run_of_config
from indexfoundry.errors import ConfigInvalid, IndexFoundryError, NotFound
from indexfoundry.models.base import Strict
from indexfoundry.models.config import FolderSource, PdfSource, PipelineConfig
from indexfoundry.models.retrieval import SearchRequest, SearchResult
from indexfoundry.models.serve import (
    LibrariesView,
    LibraryPageItem,
    LibraryPagesView,
    LibraryPageView,
    LibrarySearched,
    LibrarySearchHit,
    LibrarySearchView,
    LibrarySectionView,
    LibraryVersionView,
)
from indexfoundry.models.validation import validation_error
from indexfoundry.pipeline.cleanup import discard_run
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import RunLayout, is_run_id
from indexfoundry.storage.manifest import frozen_config, load_manifest

log = logging.getLogger("indexfoundry.libraries")

_NAME = re.compile(r"^@?[A-Za-z0-9][A-Za-z0-9._/@+-]{0,127}$")
LATEST = "latest"
DEFAULT_REFRESH_S = 3600.0


class LibraryEntry(Strict):
    """One library version of a ``libraries.yaml``."""

    name: str = Field(min_length=1, max_length=128, description="Library name, e.g. 'react'")
    version: str = Field(min_length=1, max_length=64, description="Version, e.g. '18.3.1'")
    source: str = Field(min_length=1, max_length=4096, description="Run id, pipeline config file or docs folder")
    refresh_interval_s: float | None = Field(
        default=None, ge=0, description="Seconds between refreshes of remote sources (0: never; default: the server's)"
    )


class LibrariesFile(Strict):
    """``libraries.yaml``: the libraries one server serves."""

    libraries: list[LibraryEntry] = Field(default_factory=list, description="Library versions served")


def parse_library_flag(value: str) -> LibraryEntry:
    """``NAME@VERSION=TARGET`` (the name may itself contain '@', as in '@types/node@20=...')."""
    spec, sep, target = value.partition("=")
    name, at, version = spec.rpartition("@")
    if not sep or not at or not name or not version or not target:
        raise ConfigInvalid(
            f"--library '{value}' is not NAME@VERSION=RUN_OR_CONFIG",
            suggestion="e.g. --library react@18.3.1=./react-18.yaml (a run id, a config file or a docs folder)",
        )
    return _entry({"name": name.strip(), "version": version.strip(), "source": target.strip()}, "--library")


def _entry(data: dict[str, Any], what: str) -> LibraryEntry:
    try:
        entry = LibraryEntry.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, what) from None
    if not _NAME.match(entry.name) or not _NAME.match(entry.version):
        raise ConfigInvalid(
            f"{what}: '{entry.name}@{entry.version}' has characters a library name or version cannot have",
            suggestion="Use letters, digits and . _ - / @",
        )
    return entry


def read_libraries_file(path: Path) -> list[LibraryEntry]:
    """The entries of a ``libraries.yaml`` (relative sources are relative to the file)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigInvalid(f"cannot read {path}: {' '.join(str(exc).split())}", suggestion="Check the file") from None
    try:
        parsed = LibrariesFile.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, str(path)) from None
    out = []
    for item in parsed.libraries:
        entry = _entry(item.model_dump(), str(path))
        if not is_run_id(entry.source):
            entry.source = str((path.parent / entry.source).expanduser().resolve())
        out.append(entry)
    return out


# ---------------------------------------------------------------- versions
def _version(value: str) -> Version | None:
    try:
        return Version(value)
    except InvalidVersion:
        return None


def version_order(value: str) -> tuple[int, Any]:
    """Sort key: PEP 440 versions by their order, above non-PEP 440 ones (by text)."""
    parsed = _version(value)
    return (1, parsed) if parsed is not None else (0, value)


def _specifier(query: str) -> SpecifierSet | None:
    text = query.strip()
    wildcard = re.fullmatch(r"(\d+(?:\.\d+)*)\.(?:x|\*)", text, re.IGNORECASE)
    if wildcard:
        text = f"=={wildcard.group(1)}.*"
    elif not re.match(r"^(==|!=|<=|>=|<|>|~=)", text):
        return None
    text = re.sub(r"\s*,\s*|\s+(?=(==|!=|<=|>=|<|>|~=))", ",", text)
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ConfigInvalid(
            f"version '{query}' is not a version or a range",
            suggestion="Use an exact version, 'latest', '18.x' or a range like '>=18 <19'",
        ) from None


def pick_version(versions: list[str], query: str | None) -> str | None:
    """The highest of ``versions`` matching ``query`` (None or 'latest': the highest)."""
    ordered = sorted(versions, key=version_order, reverse=True)
    if query is None or query.strip().lower() == LATEST:
        return ordered[0] if ordered else None
    wanted = query.strip()
    exact = _version(wanted)
    for candidate in ordered:
        parsed = _version(candidate)
        if candidate == wanted or (exact is not None and parsed is not None and parsed == exact):
            return candidate
    specifier = _specifier(wanted)
    if specifier is None:
        return None
    for candidate in ordered:
        parsed = _version(candidate)
        if parsed is not None and specifier.contains(parsed, prereleases=True):
            return candidate
    return None


# ---------------------------------------------------------------- serving
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


# ---------------------------------------------------------------- reading (the HTTP API's use cases)
def iso_time(stamp: float | None) -> str | None:
    """A wall-clock time as ISO 8601 UTC (seconds)."""
    from datetime import UTC, datetime

    if stamp is None:
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class LibraryReader:
    """Lists, searches and reads the libraries of a registry through ``Run`` handles (a pool)."""

    def __init__(self, registry: LibraryRegistry, runs: Any) -> None:
        self.registry = registry
        self.runs = runs  # api.RunPool

    def list(self, name: str | None = None) -> LibrariesView:
        out = []
        seen: set[str] = set()
        for lib in self.registry.libraries():
            if name is not None and lib.name != name:
                continue
            with self.runs.using(lib.run_id()) as run:
                out.append(
                    LibraryVersionView(
                        name=lib.name,
                        version=lib.version,
                        latest=lib.name not in seen,
                        run_id=run.id,
                        indexed_at=run.indexed_at,
                        checked_at=iso_time(lib.checked_at) if lib.remote() else None,
                        pages=len(run.pages.documents),
                    )
                )
            seen.add(lib.name)
        return LibrariesView(libraries=out)

    def search(
        self,
        request: SearchRequest,
        library: str | None = None,
        version: str | None = None,
        admit: Callable[[Any], None] | None = None,
    ) -> LibrarySearchView:
        """Search one library (at the version ``version`` picks) or every library; results merged
        by score (ties: library label, then rank) and labelled. ``admit(run)`` may refuse a run."""
        chosen = (
            [self.registry.resolve(library, version)] if library is not None else self.registry.latest_each(version)
        )
        searched: list[LibrarySearched] = []
        found: list[tuple[float, str, int, Library, SearchResult]] = []
        for lib in chosen:
            with self.runs.using(lib.run_id()) as run:
                if admit is not None:
                    admit(run)
                offered = run.profile.retrieval_config.search_modes
                mode = request.mode if request.mode in offered else run.profile.retrieval_config.default_mode
                response = run.search_request(request.model_copy(update={"mode": mode}))
            searched.append(
                LibrarySearched(
                    library=lib.name, version=lib.version, run_id=response.run_id, indexed_at=response.indexed_at
                )
            )
            found.extend((-r.score, lib.label, rank, lib, r) for rank, r in enumerate(response.results))
        found.sort(key=lambda item: item[:3])
        hits = [LibrarySearchHit(library=lib.name, version=lib.version, result=r) for *_, lib, r in found]
        return LibrarySearchView(query=request.query, searched=searched, results=hits[: request.top_k])

    def page(
        self, name: str, version: str | None, path: str, admit: Callable[[Any], None] | None = None
    ) -> LibraryPageView:
        lib = self.registry.resolve(name, version)
        with self.runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            page = run.page(path)
            return LibraryPageView(
                library=lib.name,
                version=lib.version,
                run_id=run.id,
                path=path,
                title=page.document.title,
                text=page.text,
            )

    def section(
        self, name: str, version: str | None, path: str, heading: str, admit: Callable[[Any], None] | None = None
    ) -> LibrarySectionView:
        lib = self.registry.resolve(name, version)
        with self.runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            found = run.section(path, heading)
            return LibrarySectionView(
                library=lib.name,
                version=lib.version,
                run_id=run.id,
                path=path,
                breadcrumb=found.breadcrumb,
                text=found.text,
                other_matches=found.other_matches,
            )

    def pages(
        self,
        name: str,
        version: str | None,
        prefix: str | None = None,
        offset: int = 0,
        limit: int = 200,
        admit: Callable[[Any], None] | None = None,
    ) -> LibraryPagesView:
        lib = self.registry.resolve(name, version)
        with self.runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            documents = run.pages.documents
            keys = [k for k in documents if prefix is None or k.startswith(prefix)]
            items = [LibraryPageItem(path=k, title=documents[k].title) for k in keys[offset : offset + limit]]
            return LibraryPagesView(library=lib.name, version=lib.version, run_id=run.id, total=len(keys), pages=items)
