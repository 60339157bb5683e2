"""Marks that a run is in use (being served, or used as the base of a run in progress).

A mark is a small file ``<runs>/.inuse/<run_id>.<kind>.<pid>`` holding the pid. ``run
cleanup`` never removes a run with a live mark. Marks of processes that are gone (killed,
crashed) are stale: ``runs_in_use`` ignores them and removes them.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from indexfoundry.storage.atomic import atomic_write_text
from indexfoundry.storage.layout import inuse_dir, is_run_id

_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def _mark_path(runs_dir: Path, run_id: str, kind: str, pid: int) -> Path:
    if not is_run_id(run_id) or not _KIND.fullmatch(kind):
        raise ValueError(f"bad in-use mark {run_id!r} {kind!r}")
    return inuse_dir(runs_dir) / f"{run_id}.{kind}.{pid}"


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (signal 0 checks without signalling)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def mark_in_use(runs_dir: Path, run_id: str, kind: str, pid: int | None = None) -> Path:
    """Mark ``run_id`` as in use by process ``pid`` (default: this process) for ``kind``."""
    path = _mark_path(runs_dir, run_id, kind, os.getpid() if pid is None else pid)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, f"{os.getpid() if pid is None else pid}\n")
    return path


def release(runs_dir: Path, run_id: str, kind: str, pid: int | None = None) -> None:
    """Remove the mark set by ``mark_in_use`` (no error if it is already gone)."""
    path = _mark_path(runs_dir, run_id, kind, os.getpid() if pid is None else pid)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextlib.contextmanager
def in_use(runs_dir: Path, run_id: str, kind: str) -> Iterator[None]:
    """Mark ``run_id`` in use by this process while the block runs."""
    mark_in_use(runs_dir, run_id, kind)
    try:
        yield
    finally:
        release(runs_dir, run_id, kind)


def runs_in_use(runs_dir: Path) -> dict[str, list[str]]:
    """Runs with a live mark: run id -> sorted kinds. Stale marks are ignored and removed."""
    folder = inuse_dir(runs_dir)
    found: dict[str, set[str]] = {}
    if not folder.is_dir():
        return {}
    for path in folder.iterdir():
        parts = path.name.split(".")
        if len(parts) != 3 or not is_run_id(parts[0]) or not parts[2].isdigit():
            continue
        run_id, kind, pid = parts[0], parts[1], int(parts[2])
        if not pid_alive(pid):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        found.setdefault(run_id, set()).add(kind)
    return {run_id: sorted(kinds) for run_id, kinds in sorted(found.items())}
