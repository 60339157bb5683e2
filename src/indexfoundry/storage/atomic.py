"""Atomic writes: temp file in the same folder, fsync, rename.

A reader never sees a half-written artifact: either the old file or the complete new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from indexfoundry.storage.hashing import canonical_json


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_current_umask()


def new_temp_file(directory: Path, name: str) -> tuple[int, Path]:
    """A temp file next to its final place, with the permissions a normal file would get."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.fchmod(fd, _FILE_MODE)
    return fd, Path(tmp_name)


def remove_stale_temp_files(root: Path) -> int:
    """Delete the temp files (``.<name>.<random>.tmp``) a killed writer left under ``root``.

    Call only while holding the run's lock: no writer of the run is alive then, so every temp
    file is an unfinished write that will never be renamed into place. Returns how many.
    """
    removed = 0
    for path in root.rglob(".*.tmp"):
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


def atomic_write_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (temp file + fsync + rename).

    ``fsync=False`` is for writing thousands of small files (one per record): the rename is
    still atomic, and the caller calls ``sync_filesystem()`` once before its manifest.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temp_file(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if fsync:
        _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, fsync: bool = True) -> None:
    """Write UTF-8 text atomically."""
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def sync_filesystem() -> None:
    """Flush every write made with ``fsync=False`` to disk (one sync instead of one per file)."""
    os.sync()


def dump_json(value: Any) -> str:
    """Pretty, stable JSON for artifacts people read (sorted keys, 2-space indent, newline)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_json(path: Path, value: Any) -> None:
    """Write a JSON document atomically in the stable pretty form."""
    atomic_write_text(path, dump_json(value))


def jsonl_line(value: Any) -> str:
    """One canonical JSONL line (no trailing newline)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    return canonical_json(value)


def atomic_write_jsonl(path: Path, rows: Iterable[Any]) -> int:
    """Write rows as canonical JSONL atomically; returns the number of rows."""
    lines = [jsonl_line(row) for row in rows]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Yield each JSON object of a JSONL file."""
    with path.open("r", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_json(path: Path) -> Any:
    """Read a JSON document."""
    return json.loads(path.read_text(encoding="utf-8"))


def append_ndjson(path: Path, value: Any) -> None:
    """Append one line to a log file (logs are append-only, not content artifacts)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = jsonl_line(value) + "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line)
