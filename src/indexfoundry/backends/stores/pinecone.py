"""Pinecone through the official ``pinecone`` client (extra ``pinecone``), REST data plane.

Connection: ``{host}`` — the index's data-plane host (``https://<index>-<project>.svc.<region>.pinecone.io``,
shown by the Pinecone console or ``pc.indexes.describe(name).host``) — and ``api_key_env``
naming the variable holding the API key (default ``PINECONE_API_KEY``); optional
``max_retries`` (the client's own retry of 408/429/5xx, default 3) and ``timeout`` (s). The
index must exist with the run's dimension and the cosine metric (checked with
``describe_index_stats``); IndexFoundry never calls the control plane.

Layout: the collection (and namespace) is one Pinecone namespace, ``<collection>`` or
``<collection>::<namespace>``; the chunk text is the ``_text`` metadata key (clipped to stay
under Pinecone's 40 KB metadata limit); the model and dimensions of a collection are one
record in the reserved namespace ``__indexfoundry__``. Filters are Pinecone's own
(``$eq $ne $gt $gte $lt $lte $in $nin $and $or``); hits are re-checked with the shared rule
(Pinecone matches a missing field under ``$ne``/``$nin``).

Tested against a local emulator of the REST data plane (``tests/emulators/pinecone.py``:
upsert, query with filters, fetch, delete, list, describe_index_stats), not the live service.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.stores import (
    Metadata,
    StoreHit,
    checked_query,
    model_mismatch,
    parse_where,
    secret_env,
    store_error,
    translating,
)
from indexfoundry.errors import ConfigInvalid, DbError, missing_extra
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import RunLayout

TEXT_KEY = "_text"
META_NAMESPACE = "__indexfoundry__"
MAX_TEXT_BYTES = 30000
# Pinecone caps top_k of a query.
MAX_TOP_K = 10000


def _db_error(action: str, exc: BaseException) -> DbError:
    name = type(exc).__name__
    recoverable = name in ("PineconeConnectionError", "PineconeTimeoutError", "RateLimitError", "ServiceError")
    return store_error(
        "Pinecone",
        action,
        exc,
        recoverable=recoverable,
        suggestion=(
            "Check that the Pinecone index host is reachable, then rerun the same run (--run-id) to resume it"
            if recoverable
            else "Check vector_db.connection.host, the API key and the index's dimension and metric"
        ),
    )


def _clip(text: str) -> str:
    data = text.encode("utf-8")
    return text if len(data) <= MAX_TEXT_BYTES else data[:MAX_TEXT_BYTES].decode("utf-8", errors="ignore")


class PineconeStore:
    def __init__(self, config: VectorDbConfig) -> None:
        try:
            from pinecone import Pinecone, RetryConfig
        except ImportError:
            raise missing_extra("pinecone", "pinecone", "the pinecone vector store") from None
        conn = config.connection
        host = str(conn.get("host") or "")
        if not host:
            raise ConfigInvalid(
                "pinecone needs vector_db.connection.host (the index's data-plane host)",
                suggestion="Set connection: {host: 'https://<index>-<project>.svc.<region>.pinecone.io'}",
            )
        self.config = config
        self.collection = config.collection
        self.pc_namespace = config.collection + (f"::{config.namespace}" if config.namespace else "")
        api_key = secret_env({"api_key_env": conn.get("api_key_env", "PINECONE_API_KEY")}, "api_key_env", "pinecone")
        with translating(_db_error, "connection"):
            self.client = Pinecone(
                api_key=api_key,
                timeout=float(conn.get("timeout", 30)),
                retry_config=RetryConfig(max_retries=int(conn.get("max_retries", 3))),
            )
            self.index: Any = self.client.index(host=host)

    def _meta_id(self) -> str:
        return "collection-" + sha256_text(self.pc_namespace)[:32]

    def _stats(self) -> Any:
        with translating(_db_error, "describe_index_stats"):
            return self.index.describe_index_stats()

    def _held(self) -> tuple[Any, Any] | None:
        with translating(_db_error, "fetch"):
            got = self.index.fetch(ids=[self._meta_id()], namespace=META_NAMESPACE)
        record = got.vectors.get(self._meta_id())
        if record is None:
            return None
        meta = dict(record.metadata or {})
        return meta.get("embedding_model"), meta.get("dimensions")

    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None:
        stats = self._stats()
        if stats.dimension not in (None, dimensions) or (stats.metric or "cosine") != "cosine":
            raise DbError(
                f"Pinecone index has dimension {stats.dimension} and metric {stats.metric}; "
                f"this run needs {dimensions} and cosine",
                suggestion="Create a Pinecone index with the run's dimension and metric='cosine'",
            )
        held = self._held()
        if reset:
            if self.pc_namespace in (stats.namespaces or {}):
                with translating(_db_error, "delete"):
                    self.index.delete(delete_all=True, namespace=self.pc_namespace)
        elif held is not None:
            error = model_mismatch(self.collection, held[0], held[1], model_id, dimensions)
            if error is not None:
                raise error
        if held != (model_id, dimensions):
            # The record's vector only has to be a valid non-zero vector of the index's dimension.
            marker = [1.0] + [0.0] * (dimensions - 1)
            meta = {"embedding_model": model_id, "dimensions": dimensions, "collection": self.pc_namespace}
            with translating(_db_error, "upsert"):
                self.index.upsert(
                    vectors=[{"id": self._meta_id(), "values": marker, "metadata": meta}],
                    namespace=META_NAMESPACE,
                    show_progress=False,
                )

    def _require(self) -> None:
        if self._held() is None:
            raise DbError(
                f"collection '{self.collection}' does not exist in the Pinecone index",
                suggestion="Run the index phase first",
            )

    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        out: dict[str, Metadata] = {}
        with translating(_db_error, "fetch"):
            for start in range(0, len(ids), 100):
                got = self.index.fetch(ids=ids[start : start + 100], namespace=self.pc_namespace)
                for vid, record in got.vectors.items():
                    out[vid] = {k: v for k, v in (record.metadata or {}).items() if k != TEXT_KEY}
        return out

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        matrix = np.asarray(vectors, dtype=np.float32)
        records = []
        for i, cid in enumerate(ids):
            meta: dict[str, Any] = dict(metadatas[i])
            if texts is not None:
                meta[TEXT_KEY] = _clip(texts[i])
            records.append({"id": cid, "values": matrix[i].tolist(), "metadata": meta})
        with translating(_db_error, "upsert"):
            self.index.upsert(vectors=records, namespace=self.pc_namespace, show_progress=False)

    def all_ids(self) -> list[str]:
        self._require()
        ids: list[str] = []
        token: str | None = None
        with translating(_db_error, "list"):
            while True:
                page = self.index.list_paginated(namespace=self.pc_namespace, limit=100, pagination_token=token)
                ids.extend(str(v.id) for v in page.vectors if v.id is not None)
                token = page.pagination.next if page.pagination else None
                if not token:
                    break
        return sorted(ids)

    def delete(self, ids: list[str]) -> None:
        with translating(_db_error, "delete"):
            for start in range(0, len(ids), 1000):
                self.index.delete(ids=ids[start : start + 1000], namespace=self.pc_namespace)

    def count(self) -> int:
        return len(self.all_ids())

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        self._require()
        flt = parse_where(where)
        q = np.asarray(vector, dtype=np.float32).reshape(-1).tolist()

        def run(n: int) -> list[StoreHit]:
            with translating(_db_error, "query"):
                result = self.index.query(
                    vector=q, top_k=n, namespace=self.pc_namespace, filter=where or None, include_metadata=True
                )
            hits = []
            for match in result.matches:
                meta = dict(match.metadata or {})
                text = meta.pop(TEXT_KEY, None)
                hits.append(StoreHit(id=str(match.id), score=float(match.score), text=text, metadata=meta))
            return hits

        # No namespace key in the metadata: the Pinecone namespace already scopes every read.
        return checked_query(run, min(top_k, MAX_TOP_K), flt, None, MAX_TOP_K)

    def max_batch_size(self) -> int:
        # Pinecone refuses requests over 2 MB or 1,000 vectors.
        return 100

    def close(self) -> None:
        self.index.close()
        self.client.close()


def open_store(config: VectorDbConfig, layout: RunLayout) -> PineconeStore:
    """Open the Pinecone index at ``connection.host``."""
    return PineconeStore(config)
