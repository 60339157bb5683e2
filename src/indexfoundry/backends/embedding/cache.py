"""Embedding cache keyed by (model id, text hash): the same text is never embedded twice.

One SQLite file per runs folder (``<runs>/.cache/embeddings.sqlite``), shared by every run
and safe for several processes at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from indexfoundry.backends.embedding.base import Vectors

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
)
"""


class EmbeddingCache:
    """Persistent (model, text hash) -> float32 vector store."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def get_many(self, model: str, text_hashes: Iterable[str]) -> dict[str, Vectors]:
        """Cached vectors for those of ``text_hashes`` that are present."""
        wanted = list(dict.fromkeys(text_hashes))
        found: dict[str, Vectors] = {}
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({marks})",
                [model, *batch],
            )
            for text_hash, blob in rows:
                found[text_hash] = np.frombuffer(blob, dtype="<f4").copy()
        return found

    def put_many(self, model: str, items: dict[str, Vectors]) -> None:
        """Store vectors (committed at once, so an interrupted run keeps what it computed)."""
        self._db.executemany(
            "INSERT OR REPLACE INTO embeddings (model, text_hash, dimensions, vector) VALUES (?, ?, ?, ?)",
            [(model, h, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes()) for h, v in items.items()],
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()
