"""The shape every phase shares: typed config slice in, artifacts and a phase manifest out.

A phase declares its name and version, which slice of the pipeline config it reads, and
how to compute its input hashes; the runner (``pipeline.runner``) fingerprints those,
decides whether to skip, and writes the manifest. A phase finds its inputs through the
upstream phase's manifest and artifacts, never by globbing folders.
"""

from __future__ import annotations

import functools
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, overload

from indexfoundry import __version__
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import GlobalConfig, PipelineConfig
from indexfoundry.models.manifests import ErrorRecord, PhaseManifest, PhaseName, RunManifest
from indexfoundry.models.records import chunk_field
from indexfoundry.phases.executor import LOCAL, Executor
from indexfoundry.storage.atomic import append_ndjson, iter_jsonl
from indexfoundry.storage.layout import RunLayout

T = TypeVar("T")


class ProgressTask(Protocol):
    def advance(self, amount: int = 1) -> None: ...


class ProgressReporter(Protocol):
    """Progress sink: rich bars in the CLI, MCP progress notifications, or nothing."""

    def task(self, description: str, total: int | None) -> Any: ...


class _NullTask:
    def advance(self, amount: int = 1) -> None:
        return None


class NullProgress:
    """Progress reporter that reports nothing (library use, tests)."""

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        yield _NullTask()


@functools.lru_cache(maxsize=256)
def package_version(name: str) -> str:
    """Installed version of a distribution, or 'not-installed' (read once per process: every
    phase fingerprint asks, and reading a distribution's metadata costs milliseconds)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not-installed"


@dataclass
class PhaseContext:
    """What a phase may use while it runs."""

    layout: RunLayout
    config: PipelineConfig
    global_config: GlobalConfig
    force: bool = False
    progress: Any = field(default_factory=NullProgress)
    # Writes served/openapi.json from the HTTP app (app.serving.write_openapi, handed in by app.runs):
    # the spec is generated from the app the server runs, and a phase does not import the app.
    openapi_writer: Callable[[RunLayout, Any], Any] | None = None
    # Test and library hook: an embedder instance to use instead of the configured one.
    embedder_override: Any = None
    base_layout: RunLayout | None = None
    # The completed run this one follows: its base, or without one the 'latest' that a plain
    # rerun of the same sources replaces. Unchanged extractions are copied from it and the index
    # phase starts from its embedded store (same store settings and model), as with ``--base``.
    follows: RunLayout | None = None
    # This phase's last committed (completed) manifest in this run, when it is being rerun.
    previous_phase: PhaseManifest | None = None
    # The run's manifest as its writer holds it (the runner's session: every phase entry but the
    # running one is as committed), read instead of loading manifest.json again. None: the file.
    manifest: RunManifest | None = None
    # Items a phase took unchanged from the base run, by phase name (see phases/extract/reuse.py).
    reuse_counts: dict[str, int] = field(default_factory=dict)
    errors: list[ErrorRecord] = field(default_factory=list)
    log: Callable[[str], None] = field(default=lambda message: print(message, file=sys.stderr))
    # Where per-document / per-batch work runs (``phases/executor.py``): the run's executor, or
    # ``LOCAL`` (here; limited work in workers started per call) when nobody opened one.
    executor: Executor = LOCAL
    # Called by a phase when it hands work to its workers and waits for them: the runner then
    # imports what the later phases will need on a background thread (``pipeline/preload.py``).
    waiting_on_workers: Callable[[], None] = field(default=lambda: None)

    @property
    def runs_dir(self) -> Path:
        return self.layout.runs_dir

    @property
    def stop_on_error(self) -> bool:
        return self.config.stop_on_error

    def event(self, event: str, **fields: Any) -> None:
        """Append a structured event to ``logs/events.ndjson``."""
        from indexfoundry.storage.clock import utc_now

        append_ndjson(self.layout.events_log, {"ts": utc_now(), "event": event, **fields})

    def record_error(self, error: IndexFoundryError, phase: PhaseName, uri: str | None = None) -> None:
        """Record a document-level failure; with ``stop_on_error`` the phase fails instead."""
        record = ErrorRecord.from_error(error, phase=phase, uri=uri)
        self.errors.append(record)
        from indexfoundry.storage.clock import utc_now

        append_ndjson(
            self.layout.errors_log,
            {"ts": utc_now(), **record.model_dump(mode="json", exclude_none=True), "details": error.details},
        )
        if self.stop_on_error:
            raise error


@dataclass
class PhaseOutcome:
    """What a phase reports back to the runner after writing its artifacts."""

    artifacts: list[Path]
    output_count: int
    stats: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    reused: int = 0
    new: int = 0
    # Relative paths of artifacts whose record count is reported in the manifest.
    record_counts: dict[str, int] = field(default_factory=dict)
    # Per-item files (one or two per source or document: raw files, extracted texts), by path
    # relative to the run: named in the phase's file list (``RunLayout.file_list``, sorted there),
    # not one by one in the manifest. The value is the file's SHA-256 when the phase wrote or
    # verified the file itself (not read again for the list), else None.
    files: dict[str, str | None] = field(default_factory=dict)


class LazyItems(Sequence[T]):
    """A sequence whose items are made when read (an executor reads them as it sends them), so
    a phase never holds every document's bytes or text at once."""

    def __init__(self, length: int, make: Callable[[int], T]) -> None:
        self._length = length
        self._make = make

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return [self._make(i) for i in range(*index.indices(self._length))]
        if not -self._length <= index < self._length:
            raise IndexError(index)
        return self._make(index % self._length)


class Phase(ABC):
    """One of the five phases. Subclasses are stateless; all state is on disk."""

    name: ClassVar[PhaseName]
    version: ClassVar[str]
    # True for a phase whose artifacts follow from its fingerprint alone (its inputs' hashes,
    # config slice, version and libraries), never from the run's own earlier state: a new run
    # whose phase has the fingerprint of the completed phase of the run it follows (its base, or
    # the 'latest' it replaces) takes that run's artifacts, verified and linked, instead of doing
    # the same work again (the runner's ``_taken``).
    same_output_for_same_fingerprint: ClassVar[bool] = False

    def same_output_for(self, config: PipelineConfig) -> bool:
        """``same_output_for_same_fingerprint`` under ``config`` (a phase whose artifacts follow
        from its fingerprint for some configs only says which)."""
        return self.same_output_for_same_fingerprint

    @abstractmethod
    def config_slice(self, config: PipelineConfig) -> Any:
        """The part of the pipeline config this phase depends on (hashed into the fingerprint)."""

    def tool_versions(self) -> dict[str, str]:
        """Versions of the libraries whose output this phase depends on."""
        return {"indexfoundry": __version__}

    @abstractmethod
    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        """Sorted hashes of everything this phase reads (upstream artifacts or source contents)."""

    @abstractmethod
    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        """Do the work and write the artifacts atomically."""

    def prepare_ahead(self, ctx: PhaseContext) -> tuple[str | Callable[[], object], ...]:
        """What this phase will need that takes long to get: modules to import (a store's client,
        an index library) and loaders that fill a process cache this phase reads (a model's
        session). The runner prepares them on a background thread once an earlier phase waits on
        its workers (``PhaseContext.waiting_on_workers``; ``pipeline/preload.py``); anything that
        fails there is left to this phase, which does it again. Default: nothing."""
        return ()

    def start_early(self, ctx: PhaseContext) -> Callable[[], None] | None:
        """Begin, when the run starts, work this phase will need and that runs outside the GIL
        beside the earlier phases (the index phase: the copy of the followed run's embedded
        store). Returns what the runner calls when the run ends, to drop what the phase did not
        take (it was skipped, or the run stopped before it). Default: nothing."""
        return None

    def reuse_counts(self, ctx: PhaseContext, reused: int, new: int, output_count: int) -> tuple[int, int]:
        """(reused, new) items of this completed phase in a run with a base run, for
        ``PipelineRunOutput``. Default: what the phase's outcome reported (``reused``, ``new``)."""
        return reused, new

    def publish(self, ctx: PhaseContext) -> None:
        """The run's commit point: called by the runner, once the run has passed every phase and
        guard and is about to become ``latest``, for each of its completed phases. A phase whose
        output is visible outside the run (a server store's published index) switches it here;
        an error fails the run and leaves ``latest`` where it was. Default: nothing."""
        return None


def shared_rows(mine: Path, base: Path, *keys: str) -> tuple[int, int]:
    """(rows of JSONL ``mine`` whose ``keys`` values also stand in ``base``, the other rows of ``mine``).
    Keys are dotted paths into each row (``content.text_hash``)."""
    ours = _rows(mine, keys)
    same = len(ours & _rows(base, keys))
    return same, len(ours) - same


def _rows(path: Path, keys: Sequence[str]) -> set[tuple[str, ...]]:
    if not path.is_file():
        return set()
    out: set[tuple[str, ...]] = set()
    for row in iter_jsonl(path):
        out.add(tuple(str(chunk_field(row, key)) for key in keys))
    return out


def completed_phase(layout: RunLayout, name: PhaseName) -> PhaseManifest | None:
    """The completed entry of phase ``name`` in another run's manifest (None: missing, unreadable)."""
    from indexfoundry.storage.manifest import read_manifest

    try:
        manifest = read_manifest(layout)
    except (IndexFoundryError, OSError, ValueError):
        return None
    phase = manifest.phases.get(name)
    return phase if phase is not None and phase.status == "completed" else None


def carry_source(
    ctx: PhaseContext, name: PhaseName, config_hash: str, version: str, tools: dict[str, str]
) -> tuple[RunLayout, PhaseManifest] | None:
    """Where a rerun of phase ``name`` may carry unchanged items over from, and its entry: the
    run's own last completed entry (a rerun in place), else the followed run's (its base, or the
    ``latest`` a plain run replaces), when it was made with this config hash, phase version and
    library versions and recorded no errors. Not after a tool rewrote the phase's files: the
    tool's entry keeps the phase's config hash (``details.written_by``), but the files no longer
    are the phase's. None when forced. The caller still checks the files it reads."""
    if ctx.force:
        return None
    entry: PhaseManifest | None
    if ctx.previous_phase is not None:
        run, entry = ctx.layout, ctx.previous_phase
    elif ctx.follows is not None and ctx.follows.root != ctx.layout.root:
        run, entry = ctx.follows, completed_phase(ctx.follows, name)
    else:
        return None
    if (
        entry is None
        or entry.status != "completed"
        or entry.errors
        or "written_by" in entry.details
        or entry.phase_version != version
        or entry.config_hash != config_hash
        or entry.tool_versions != tools
    ):
        return None
    return run, entry


def followed_phase(ctx: PhaseContext, name: PhaseName, fingerprint: str) -> PhaseManifest | None:
    """The completed entry of phase ``name`` in the run this new run follows (``ctx.follows``),
    when it has ``fingerprint``, recorded no errors and its artifacts (and the files their lists
    name) still verify there: what this run's phase would write, already written. None otherwise,
    and always when forced."""
    from indexfoundry.storage.manifest import artifacts_verify

    source = ctx.follows
    if ctx.force or source is None or source.root == ctx.layout.root:
        return None
    theirs = completed_phase(source, name)
    if theirs is None or theirs.fingerprint != fingerprint or theirs.errors:
        return None
    return theirs if artifacts_verify(source, theirs.artifacts) else None


def link_followed_artifacts(ctx: PhaseContext, theirs: PhaseManifest, leave: frozenset[str] = frozenset()) -> None:
    """Link the followed run's verified artifacts of ``theirs`` (``followed_phase``), and the files
    their lists name, into this run (copied where links cannot be made); paths in ``leave`` are
    the caller's to write."""
    from indexfoundry.storage.atomic import link_or_copy
    from indexfoundry.storage.manifest import read_file_list

    source = ctx.follows
    assert source is not None
    for artifact in theirs.artifacts:
        if artifact.path in leave:
            continue
        link_or_copy(source.root / artifact.path, ctx.layout.root / artifact.path)
        if artifact.files is not None:
            # Path strings: a list of 20,000 files makes no Path each.
            theirs_root, ours = os.fspath(source.root), os.fspath(ctx.layout.root)
            for rel in read_file_list(source.root / artifact.path):
                link_or_copy(os.path.join(theirs_root, rel), os.path.join(ours, rel))


def upstream_artifact_hashes(ctx: PhaseContext, phase: PhaseName) -> list[str]:
    """Hashes of the artifacts the upstream ``phase`` recorded in the run manifest."""
    from indexfoundry.storage.manifest import load_manifest

    manifest = ctx.manifest if ctx.manifest is not None else load_manifest(ctx.layout)
    upstream = manifest.phases.get(phase)
    if upstream is None or upstream.status != "completed":
        raise IndexFoundryError(
            f"phase '{phase}' has not completed in run {ctx.layout.run_id}",
            code="CONFIG_INVALID",
            suggestion=f"Run 'indexfoundry {phase} --run-id {ctx.layout.run_id}' first",
        )
    return sorted(a.sha256 for a in upstream.artifacts)
