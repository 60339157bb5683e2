"""Results of deterministic per-item work kept across runs and processes.

One SQLite file per runs folder (``<runs>/.cache/work.sqlite``, beside the embedding cache),
shared by every run and safe for several processes at once. A row is ``(kind, key) -> JSON``:
``kind`` names the work and everything its result depends on besides the input (a tool and its
version, its settings), ``key`` the input (a SHA-256). A hit gives exactly what the work would
compute, so artifacts are byte-identical with or without the cache; deleting ``.cache`` only
costs time. ``storage/memo.py`` is the in-process tier in front of it in docs mode.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from indexfoundry.storage.atomic import loads_json
from indexfoundry.storage.layout import cache_dir

_SCHEMA = """
CREATE TABLE IF NOT EXISTS work (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (kind, key)
)
"""
_BATCH = 500


class WorkCache:
    """Persistent ``(kind, key) -> JSON value`` map."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    @classmethod
    def for_runs(cls, runs_dir: Path) -> WorkCache:
        """The cache of a runs folder."""
        return cls(cache_dir(runs_dir) / "work.sqlite")

    def get_many(self, kind: str, keys: Iterable[str]) -> dict[str, Any]:
        """Stored values of those ``keys`` that are present (a stored ``None`` is present)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        for start in range(0, len(wanted), _BATCH):
            batch = wanted[start : start + _BATCH]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(f"SELECT key, value FROM work WHERE kind = ? AND key IN ({marks})", [kind, *batch])
            for key, value in rows:
                found[key] = loads_json(value)
        return found

    def put_many(self, kind: str, items: dict[str, Any]) -> None:
        """Store values (committed at once: an interrupted run keeps what it computed)."""
        if not items:
            return
        self._db.executemany(
            "INSERT OR REPLACE INTO work (kind, key, value) VALUES (?, ?, ?)",
            [(kind, key, json.dumps(value, sort_keys=True, ensure_ascii=False)) for key, value in items.items()],
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> WorkCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
