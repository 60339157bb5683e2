"""``run cleanup``: free disk space by removing old runs, safely.

Which runs go (the inputs of ``indexfoundry_run_cleanup`` plus the global config):
- runs created more than ``older_than_days`` days ago, and
- beyond ``storage.max_runs`` runs that still hold artifacts, the oldest first (FIFO).

Which runs never go:
- a run in use: being served or used as the base of a run in progress (``pipeline.inuse``
  marks of live processes), or whose run lock is held (a pipeline is working on it);
- the base of a run that is still running (even if its mark is gone);
- the newest completed run of each pipeline (what ``--run-id latest:<pipeline>`` and ``--base
  latest`` resolve to).
A finished run with a base holds a full copy of what it reused, so its base may go.

Safety: only folders whose name is a run id directly inside the runs folder are touched;
symlinks are never followed or removed; every path is resolved and checked to be inside
the runs folder before anything is deleted; the run lock is held while a run is removed.
A removed run's table in a server store that stages runs (pgvector) is dropped too, unless
it is the published index; if that fails the run is kept, with the reason. ``dry_run`` (the
default) only reports. With ``keep_manifests`` (default) ``manifest.json``
and ``config.json`` stay, so the run is still listed and diffable.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field

from indexfoundry.errors import IndexFoundryError, RunLocked
from indexfoundry.models.base import Strict
from indexfoundry.pipeline.inuse import runs_in_use
from indexfoundry.pipeline.runs import pipeline_of
from indexfoundry.storage.layout import RunLayout, is_run_id
from indexfoundry.storage.manifest import load_manifest, lock_is_held, run_lock

KEPT_FILES = frozenset({"manifest.json", "config.json"})


class CleanupItem(Strict):
    run_id: str = Field(description="Run id")
    created_at: str = Field(description="When the run was created")
    status: str = Field(description="Run status")
    reason: Literal["older_than_days", "max_runs"] = Field(description="Why it is removed")
    bytes: int = Field(description="Bytes freed (or that would be freed)")
    kept_manifest: bool = Field(description="manifest.json and config.json are kept")


class KeptItem(Strict):
    run_id: str = Field(description="Run id")
    reason: str = Field(description="Why it is kept although it matched")


class RunCleanupOutput(Strict):
    """What ``indexfoundry_run_cleanup`` answers."""

    dry_run: bool = Field(description="True: nothing was removed, this is what would be")
    removed: list[CleanupItem] = Field(default_factory=list, description="Runs removed (or to remove)")
    protected: list[KeptItem] = Field(default_factory=list, description="Matching runs kept, and why")
    bytes_freed: int = Field(default=0, description="Total bytes freed (or that would be freed)")
    runs_examined: int = Field(default=0, description="Run folders looked at")


def _tree_size(path: Path, keep: frozenset[str] = frozenset()) -> int:
    total = 0
    for root, dirs, files in os.walk(path, followlinks=False):
        top = Path(root) == path
        for name in files:
            if top and name in keep:
                continue
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue
        # os.walk does not descend into symlinked folders; count the links themselves.
        total += sum((Path(root) / d).lstat().st_size for d in dirs if (Path(root) / d).is_symlink())
    return total


def _has_artifacts(path: Path) -> bool:
    return any(child.name not in KEPT_FILES and child.name != ".lock" for child in path.iterdir())


def _inside(runs_root: Path, path: Path) -> bool:
    resolved = path.resolve()
    return resolved.parent == runs_root and not path.is_symlink()


def _remove(runs_root: Path, path: Path, keep_manifests: bool) -> None:
    if not _inside(runs_root, path):
        raise IndexFoundryError(
            f"refusing to remove {path}: not a run folder inside {runs_root}", code="CONFIG_INVALID"
        )
    if not keep_manifests:
        shutil.rmtree(path)
        return
    for child in path.iterdir():
        if child.name in KEPT_FILES or child.name == ".lock":
            continue
        if child.is_symlink() or child.is_file():
            child.unlink()
        else:
            shutil.rmtree(child)


def _release_vectors(layout: RunLayout) -> None:
    """Drop what the run holds in a server store (its pgvector table, unless published)."""
    if not layout.config.is_file():
        return
    from indexfoundry.backends.stores import release_run
    from indexfoundry.storage.manifest import load_run_config

    config = load_run_config(layout)
    release_run(config.index.vector_db, layout)


def cleanup_runs(
    runs_dir: Path,
    *,
    older_than_days: int = 30,
    keep_manifests: bool = True,
    dry_run: bool = True,
    max_runs: int | None = None,
    now: datetime | None = None,
) -> RunCleanupOutput:
    """Remove (or, with ``dry_run``, list) old runs; see the module docstring for the rules."""
    out = RunCleanupOutput(dry_run=dry_run)
    if not runs_dir.is_dir():
        return out
    runs_root = runs_dir.resolve()
    cutoff = (now or datetime.now(UTC)) - timedelta(days=older_than_days)
    in_use = runs_in_use(runs_dir)
    runs: list[tuple[datetime, str, Path, str, str | None]] = []
    pipeline: dict[str, str] = {}
    running_bases: set[str] = set()
    for path in sorted(runs_dir.iterdir()):
        if not is_run_id(path.name) or path.is_symlink() or not path.is_dir():
            continue
        out.runs_examined += 1
        layout = RunLayout(path)
        try:
            manifest = load_manifest(layout)
        except (IndexFoundryError, OSError, ValueError):
            continue
        created = datetime.fromisoformat(manifest.created_at.replace("Z", "+00:00"))
        if manifest.base_run_id and lock_is_held(layout):
            running_bases.add(manifest.base_run_id)
        runs.append((created, path.name, path, manifest.status, manifest.base_run_id))
        pipeline[path.name] = pipeline_of(layout, manifest)
    runs.sort()
    # Each pipeline's newest completed run: what its 'latest' names.
    newest_completed: dict[str, str] = {}
    for r in reversed(runs):
        if r[3] in ("completed", "partial"):
            newest_completed.setdefault(pipeline[r[1]], r[1])
    with_artifacts = [r for r in runs if _has_artifacts(r[2])]
    over = max(0, len(with_artifacts) - max_runs) if max_runs is not None else 0
    fifo = {r[1] for r in with_artifacts[:over]}
    for created, run_id, path, status, _base in runs:
        reason: Literal["older_than_days", "max_runs"] | None = None
        if created < cutoff:
            reason = "older_than_days"
        elif run_id in fifo:
            reason = "max_runs"
        if reason is None or (not _has_artifacts(path) and keep_manifests):
            continue
        why = None
        if run_id in in_use:
            why = "in use: " + ", ".join(in_use[run_id])
        elif run_id in running_bases:
            why = "base of a run in progress"
        elif newest_completed.get(pipeline[run_id]) == run_id:
            why = f"newest completed run of pipeline {pipeline[run_id]}"
        elif lock_is_held(RunLayout(path)):
            why = "a pipeline is working on it"
        if why is not None:
            out.protected.append(KeptItem(run_id=run_id, reason=why))
            continue
        size = _tree_size(path, KEPT_FILES if keep_manifests else frozenset())
        if not dry_run:
            try:
                with run_lock(RunLayout(path)):
                    _release_vectors(RunLayout(path))
                    _remove(runs_root, path, keep_manifests)
            except RunLocked:
                out.protected.append(KeptItem(run_id=run_id, reason="a pipeline is working on it"))
                continue
            except IndexFoundryError as exc:
                # The run's vectors could not be dropped (server away): keep the run, say why.
                out.protected.append(KeptItem(run_id=run_id, reason=f"vector store: {exc.code}: {exc.message}"))
                continue
        out.removed.append(
            CleanupItem(
                run_id=run_id,
                created_at=created.isoformat().replace("+00:00", "Z"),
                status=status,
                reason=reason,
                bytes=size,
                kept_manifest=keep_manifests,
            )
        )
        out.bytes_freed += size
    return out


def discard_run(runs_dir: Path, run_id: str) -> None:
    """Remove one run entirely (a refresh that found nothing new), under its lock.

    Only a run folder directly inside ``runs_dir`` that no process has marked in use is
    removed; its table in a server store is released first. Anything else raises.
    """
    path = runs_dir / run_id
    if not is_run_id(run_id) or not path.is_dir():
        raise IndexFoundryError(f"no run folder {path}", code="RUN_NOT_FOUND")
    if run_id in runs_in_use(runs_dir):
        raise RunLocked(f"run {run_id} is in use", suggestion="Stop what serves it first")
    layout = RunLayout(path)
    with run_lock(layout):
        _release_vectors(layout)
        _remove(runs_dir.resolve(), path, keep_manifests=False)
