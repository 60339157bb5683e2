"""``local``: a flat on-disk vector store searched with numpy (no extra dependency).

One folder per collection (``<path>/<collection>/``) holding
``vectors.npy`` (float32 rows), ``records.jsonl`` (id, text, metadata per row, same order,
sorted by id) and ``collection.json`` (model, dimensions, row count and the hashes of the two
data files), written last: it is the commit point, so a half-written store is detected.
Same content → byte-identical files. Exact search: cosine similarity over every row (fine
up to a few hundred thousand vectors); ties are broken by id.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.stores import (
    Metadata,
    StoreHit,
    and_filters,
    matches,
    model_mismatch,
    namespace_filter,
    parse_where,
    with_namespace,
)
from indexfoundry.errors import DbError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.atomic import atomic_write_bytes, atomic_write_json, read_json
from indexfoundry.storage.hashing import canonical_json, sha256_bytes
from indexfoundry.storage.layout import RunLayout

SCHEMA_VERSION = 1


class LocalStore:
    def __init__(self, config: VectorDbConfig, path: Path) -> None:
        self.config = config
        self.namespace = config.namespace
        self.folder = path / config.collection
        self._loaded = False
        self._dirty = False
        self.model_id: str | None = None
        self.dimensions: int | None = None
        self._vectors: dict[str, Vectors] = {}
        self._texts: dict[str, str | None] = {}
        self._metas: dict[str, Metadata] = {}
        self._matrix: tuple[list[str], Vectors] | None = None

    # ------------------------------------------------------------ persistence
    @property
    def _meta_file(self) -> Path:
        return self.folder / "collection.json"

    @property
    def _vectors_file(self) -> Path:
        return self.folder / "vectors.npy"

    @property
    def _records_file(self) -> Path:
        return self.folder / "records.jsonl"

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if not self._meta_file.is_file():
            return
        head: dict[str, Any] = read_json(self._meta_file)
        if int(head.get("schema_version", 0)) > SCHEMA_VERSION:
            raise DbError(
                f"local store {self.folder} has schema_version {head.get('schema_version')}, newer than this version",
                suggestion="Upgrade IndexFoundry, or rebuild with 'indexfoundry index --run-id ... --force'",
            )
        vec_bytes = self._vectors_file.read_bytes() if self._vectors_file.is_file() else b""
        rec_bytes = self._records_file.read_bytes() if self._records_file.is_file() else b""
        if sha256_bytes(vec_bytes) != head.get("vectors_sha256") or sha256_bytes(rec_bytes) != head.get(
            "records_sha256"
        ):
            raise DbError(
                f"local store {self.folder} is incomplete (its files do not match collection.json)",
                recoverable=True,
                suggestion="Rebuild it with 'indexfoundry index --run-id ... --force'",
            )
        self.model_id = head.get("embedding_model")
        self.dimensions = head.get("dimensions")
        matrix = np.load(io.BytesIO(vec_bytes), allow_pickle=False)
        rows = [json.loads(line) for line in rec_bytes.decode("utf-8").splitlines() if line]
        for i, row in enumerate(rows):
            sid = row["id"]
            self._vectors[sid] = matrix[i].astype(np.float32)
            self._texts[sid] = row.get("text")
            self._metas[sid] = row.get("metadata") or {}

    def _save(self) -> None:
        ids = sorted(self._vectors)
        dims = self.dimensions or 0
        matrix = np.stack([self._vectors[i] for i in ids]) if ids else np.zeros((0, dims), dtype=np.float32)
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(matrix, dtype="<f4"), allow_pickle=False)
        vec_bytes = buffer.getvalue()
        rec_bytes = b"".join(
            canonical_json({"id": i, "text": self._texts.get(i), "metadata": self._metas.get(i, {})}).encode("utf-8")
            + b"\n"
            for i in ids
        )
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self._vectors_file, vec_bytes)
        atomic_write_bytes(self._records_file, rec_bytes)
        atomic_write_json(
            self._meta_file,
            {
                "schema_version": SCHEMA_VERSION,
                "collection": self.config.collection,
                "embedding_model": self.model_id,
                "dimensions": self.dimensions,
                "count": len(ids),
                "vectors_sha256": sha256_bytes(vec_bytes),
                "records_sha256": sha256_bytes(rec_bytes),
            },
        )
        self._dirty = False

    def close(self) -> None:
        """Write pending changes (the store is written once per upsert run, not per batch)."""
        if self._dirty:
            self._save()

    # ------------------------------------------------------------ ids
    def _sid(self, chunk_id: str) -> str:
        return f"{self.namespace}/{chunk_id}" if self.namespace else chunk_id

    def _cid(self, stored: str) -> str:
        return stored.split("/", 1)[1] if self.namespace and "/" in stored else stored

    def _mine(self) -> list[str]:
        flt = namespace_filter(self.namespace)
        return [sid for sid in self._vectors if matches(flt, self._metas.get(sid, {}))]

    def _touch(self) -> None:
        self._dirty = True
        self._matrix = None

    # ------------------------------------------------------------ protocol
    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None:
        self._load()
        if reset and not self.namespace:
            self._vectors.clear()
            self._texts.clear()
            self._metas.clear()
            self.model_id = None
            self.dimensions = None
            self._touch()
        error = model_mismatch(self.config.collection, self.model_id, self.dimensions, model_id, dimensions)
        if error is not None:
            raise error
        if reset and self.namespace:
            self.delete(self.all_ids())
        if self.model_id is None:
            self.model_id, self.dimensions = model_id, dimensions
            self._touch()

    def _require(self) -> None:
        self._load()
        if self.model_id is None:
            raise DbError(
                f"collection '{self.config.collection}' does not exist in {self.folder}",
                suggestion="Run the index phase first",
            )

    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        self._load()
        return {cid: dict(self._metas[self._sid(cid)]) for cid in ids if self._sid(cid) in self._vectors}

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        self._require()
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self.dimensions:
            raise DbError(
                f"vectors of {matrix.shape[-1]} dims do not fit collection '{self.config.collection}' "
                f"({self.dimensions} dims)",
                suggestion="Use the embedding model the collection was built with",
            )
        for i, (cid, meta) in enumerate(zip(ids, with_namespace(metadatas, self.namespace), strict=True)):
            sid = self._sid(cid)
            self._vectors[sid] = matrix[i].copy()
            self._texts[sid] = texts[i] if texts is not None else None
            self._metas[sid] = dict(meta)
        self._touch()

    def all_ids(self) -> list[str]:
        self._load()
        return sorted(self._cid(sid) for sid in self._mine())

    def delete(self, ids: list[str]) -> None:
        self._load()
        for cid in ids:
            sid = self._sid(cid)
            self._vectors.pop(sid, None)
            self._texts.pop(sid, None)
            self._metas.pop(sid, None)
        if ids:
            self._touch()

    def count(self) -> int:
        return len(self.all_ids())

    def _normalized(self) -> tuple[list[str], Vectors]:
        if self._matrix is None:
            ids = sorted(self._vectors)
            if ids:
                matrix = np.stack([self._vectors[i] for i in ids]).astype(np.float32)
                norms = np.linalg.norm(matrix, axis=1, keepdims=True)
                norms[norms == 0] = 1.0
                matrix = matrix / norms
            else:
                matrix = np.zeros((0, self.dimensions or 0), dtype=np.float32)
            self._matrix = (ids, matrix.astype(np.float32))
        return self._matrix

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        self._require()
        ids, matrix = self._normalized()
        if not ids or top_k <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        scores = matrix @ (q / norm if norm else q)
        flt = and_filters(namespace_filter(self.namespace), parse_where(where))
        candidates = np.arange(len(ids))
        if flt is not None:
            mask = np.fromiter((matches(flt, self._metas[i]) for i in ids), dtype=bool, count=len(ids))
            candidates = candidates[mask]
        if candidates.size == 0:
            return []
        chosen = candidates
        if candidates.size > top_k:
            part = np.argpartition(-scores[candidates], top_k - 1)[:top_k]
            # Keep every candidate tied with the k-th score, so ties are broken by id, not by position.
            kth = scores[candidates[part]].min()
            chosen = candidates[scores[candidates] >= kth]
        order = sorted(chosen.tolist(), key=lambda i: (-float(scores[i]), ids[i]))[:top_k]
        return [
            StoreHit(
                id=self._cid(ids[i]),
                score=float(scores[i]),
                text=self._texts.get(ids[i]),
                metadata=dict(self._metas[ids[i]]),
            )
            for i in order
        ]

    def max_batch_size(self) -> int:
        return 10000


def open_store(config: VectorDbConfig, layout: RunLayout) -> LocalStore:
    """Open the local store: in the run, or in ``connection.path``."""
    conn = config.connection
    return LocalStore(config, Path(conn["path"]) if conn.get("path") else layout.local_store_dir)
