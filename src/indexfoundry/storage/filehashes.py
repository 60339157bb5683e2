"""SHA-256 of files, remembered by what ``stat`` says about them.

A rerun reads the same files again: the sources of a folder, the artifacts it verifies before
it skips a phase, the base run's files it takes over. Their hashes are kept in the runs
folder's work cache (``storage/workcache.py``) under the file's device, inode, size and
modification time (nanoseconds), as git's index does: a file whose stat is unchanged is not
read again, and a hard link to a file shares its entry. A file modified within the last
``RACY_NS`` of being hashed is never remembered (a write in the same clock tick could leave its
stat unchanged), so it is read again next time. Content ids stay content hashes: a hit gives
the hash that reading the file would give; deleting ``.cache`` only costs time.

``known_file_hashes(runs_dir)`` turns it on for the block (the runner opens it for a pipeline
run); ``file_sha256`` and ``file_sha256_many`` read the files in full outside one. Callers with
many files ask ``file_sha256_many`` once for all of them: each call is one query of the cache.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from indexfoundry.storage.hashing import StrPath, sha256_file
from indexfoundry.storage.workcache import WorkCache

KIND = "file-sha256/1"
RACY_NS = 2_000_000_000


def _key(info: os.stat_result) -> str:
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"


class FileHashes:
    """Hashes of files by their stat, kept in a work cache (``None``: every file is read)."""

    def __init__(self, cache: WorkCache | None) -> None:
        self.cache = cache
        # What this object found already, by the same keys: a run asks for the same files again
        # (a scan, then the copy; a reuse check, then the phase's file list).
        self.seen: dict[str, str] = {}

    def many(self, paths: Sequence[StrPath], stats: Sequence[os.stat_result] | None = None) -> list[str | None]:
        """The SHA-256 of each path (None: not a regular file, or unreadable), the hashes this
        cache knows looked up in one batch; ``stats``: the paths' ``os.stat`` when the caller
        just took it (not taken again)."""
        infos: list[os.stat_result | None] = []
        for index, path in enumerate(paths):
            if stats is not None:
                info: os.stat_result | None = stats[index]
            else:
                try:
                    info = os.stat(path)
                except OSError:
                    info = None
            infos.append(info if info is not None and stat.S_ISREG(info.st_mode) else None)
        keys = [_key(info) if info is not None else None for info in infos]
        seen = self.seen
        known: dict[str, object] = {k: seen[k] for k in keys if k and k in seen}
        known.update(self._known([k for k in keys if k and k not in known]))
        now = time.time_ns()
        fresh: dict[str, str] = {}
        out: list[str | None] = []
        for path, info, key in zip(paths, infos, keys, strict=True):
            if info is None or key is None:
                out.append(None)
                continue
            value = known.get(key)
            if isinstance(value, str):
                out.append(value)
                seen[key] = value
                continue
            try:
                digest = sha256_file(path)
            except OSError:
                out.append(None)
                continue
            out.append(digest)
            if now - info.st_mtime_ns > RACY_NS:
                fresh[key] = seen[key] = digest
        if self.cache is not None and fresh:
            try:
                self.cache.put_many(KIND, fresh)
            except (sqlite3.Error, OSError):
                self.cache = None  # a full disk or a file size limit: hashes are read, not kept
        return out

    def _known(self, keys: list[str]) -> dict[str, object]:
        if self.cache is None or not keys:
            return {}
        try:
            return self.cache.get_many(KIND, keys)
        except (sqlite3.Error, OSError):
            self.cache = None
            return {}


_ACTIVE: contextvars.ContextVar[FileHashes | None] = contextvars.ContextVar("indexfoundry_file_hashes", default=None)


@contextlib.contextmanager
def known_file_hashes(runs_dir: Path) -> Iterator[FileHashes]:
    """Remember file hashes in ``runs_dir``'s work cache inside the block (this thread). A cache
    that cannot be opened or written (a full disk, a file size limit) only costs reading files."""
    try:
        cache: WorkCache | None = WorkCache.for_runs(runs_dir)
    except (sqlite3.Error, OSError):
        cache = None
    hashes = FileHashes(cache)
    token = _ACTIVE.set(hashes)
    try:
        yield hashes
    finally:
        _ACTIVE.reset(token)
        if cache is not None:
            with contextlib.suppress(sqlite3.Error, OSError):
                cache.close()


def active_work_cache() -> WorkCache | None:
    """The runs folder's work cache that ``known_file_hashes`` opened for this block, if any: a
    phase keeps there what it learned about a file by its hash (a folder scan: each file's
    sniffed content type)."""
    hashes = _ACTIVE.get()
    return hashes.cache if hashes is not None else None


def file_sha256_many(paths: Sequence[StrPath], stats: Sequence[os.stat_result] | None = None) -> list[str | None]:
    """The SHA-256 of each path (None: missing or not a regular file), by stat where known: one
    look-up of the work cache for all of them (a scan of 20,000 files asks once, not 20,000
    times). ``stats``: each path's ``os.stat``, when the caller has just taken it. Paths may be
    strings: a caller with 20,000 of them makes no ``Path`` for each."""
    return (_ACTIVE.get() or FileHashes(None)).many(paths, stats)


def file_sha256(path: StrPath) -> str:
    """The SHA-256 of one file, by stat where known; OSError when it cannot be read."""
    digest = file_sha256_many([path])[0]
    if digest is None:
        return sha256_file(path)  # raises the OSError that says why
    return digest
