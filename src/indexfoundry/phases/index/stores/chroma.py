"""Chroma: embedded persistent client by default, ``HttpClient`` when host/port are configured.

Vectors are always precomputed (``embedding_function=None``): Chroma never embeds, so it
never tries to download a model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.errors import DbError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.phases.index.embedders import Vectors
from indexfoundry.phases.index.stores import Metadata, StoreHit

_NAME_OK = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")


def _db_error(action: str, exc: Exception) -> DbError:
    recoverable = any(word in type(exc).__name__.lower() for word in ("connect", "timeout", "unavailable"))
    return DbError(
        f"Chroma {action} failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
        recoverable=recoverable or "connect" in str(exc).lower(),
        suggestion="Check that the Chroma server is reachable, then rerun the index phase",
    )


class ChromaStore:
    def __init__(self, config: VectorDbConfig, default_path: Path, run_root: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        if not _NAME_OK.match(config.collection):
            from indexfoundry.errors import ConfigInvalid

            raise ConfigInvalid(
                f"collection name '{config.collection}' is not valid for Chroma",
                suggestion="Use 3-512 characters from a-z A-Z 0-9 . _ -, starting and ending alphanumeric",
            )
        self.config = config
        conn = config.connection
        settings = Settings(anonymized_telemetry=False)
        try:
            if "host" in conn:
                self.client: Any = chromadb.HttpClient(
                    host=str(conn["host"]), port=int(conn.get("port", 8000)), settings=settings
                )
            else:
                path = Path(conn.get("path", default_path))
                path.mkdir(parents=True, exist_ok=True)
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
        except Exception as exc:
            raise _db_error("connection", exc) from None
        self._collection: Any = None

    def _where(self, where: dict[str, Any] | None) -> dict[str, Any] | None:
        clauses: list[dict[str, Any]] = []
        if self.config.namespace:
            clauses.append({"namespace": {"$eq": self.config.namespace}})
        if where:
            clauses.append(where)
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    @property
    def collection(self) -> Any:
        if self._collection is None:
            try:
                self._collection = self.client.get_collection(self.config.collection, embedding_function=None)
            except Exception as exc:
                raise DbError(
                    f"collection '{self.config.collection}' does not exist: {exc}",
                    suggestion="Run the index phase first",
                ) from None
        return self._collection

    def ensure_collection(self, model_id: str, dimensions: int) -> None:
        try:
            self._collection = self.client.get_or_create_collection(
                self.config.collection,
                embedding_function=None,
                metadata={"hnsw:space": "cosine", "embedding_model": model_id, "dimensions": dimensions},
            )
        except Exception as exc:
            raise _db_error("open collection", exc) from None
        meta = self._collection.metadata or {}
        if meta.get("embedding_model") not in (None, model_id) or meta.get("dimensions") not in (
            None,
            dimensions,
        ):
            raise DbError(
                f"collection '{self.config.collection}' holds vectors of {meta.get('embedding_model')} "
                f"({meta.get('dimensions')} dims); refusing to add {model_id} ({dimensions} dims)",
                suggestion="Use another collection name, or the same embedding model as before",
            )

    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        out: dict[str, Metadata] = {}
        try:
            for start in range(0, len(ids), 1000):
                got = self.collection.get(ids=ids[start : start + 1000], include=["metadatas"])
                for cid, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
                    out[cid] = dict(meta or {})
        except DbError:
            raise
        except Exception as exc:
            raise _db_error("get", exc) from None
        return out

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        if self.config.namespace:
            metadatas = [{**m, "namespace": self.config.namespace} for m in metadatas]
        try:
            self.collection.upsert(
                ids=ids,
                embeddings=np.asarray(vectors, dtype=np.float32),
                documents=texts,
                metadatas=metadatas,
            )
        except Exception as exc:
            raise _db_error("upsert", exc) from None

    def all_ids(self) -> list[str]:
        try:
            got = self.collection.get(where=self._where(None), include=[])
        except Exception as exc:
            raise _db_error("list ids", exc) from None
        return sorted(got["ids"])

    def delete(self, ids: list[str]) -> None:
        try:
            for start in range(0, len(ids), 1000):
                self.collection.delete(ids=ids[start : start + 1000])
        except Exception as exc:
            raise _db_error("delete", exc) from None

    def count(self) -> int:
        return len(self.all_ids()) if self.config.namespace else int(self.collection.count())

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        try:
            result = self.collection.query(
                query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
                n_results=top_k,
                where=self._where(where),
                include=["distances", "metadatas", "documents"],
            )
        except Exception as exc:
            raise _db_error("query", exc) from None
        hits: list[StoreHit] = []
        ids = result["ids"][0]
        for i, cid in enumerate(ids):
            distance = float(result["distances"][0][i])
            docs = result.get("documents")
            metas = result.get("metadatas")
            hits.append(
                StoreHit(
                    id=cid,
                    score=1.0 - distance,
                    text=docs[0][i] if docs else None,
                    metadata=dict(metas[0][i] or {}) if metas else {},
                )
            )
        return hits

    def max_batch_size(self) -> int:
        try:
            return int(self.client.get_max_batch_size())
        except Exception:
            return 1000
