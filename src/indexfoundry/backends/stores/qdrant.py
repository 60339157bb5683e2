"""Qdrant through ``qdrant-client`` (extra ``qdrant``).

Connection: ``{path}`` for local mode (default: ``indexed/qdrant`` in the run), or ``{url}`` /
``{host, port, https}`` for a server, with ``api_key_env`` naming the variable holding its key.
A server's calls are retried on network errors and 429/5xx (``max_retries``, default 3;
``backoff_ms``, default 500), then fail with a recoverable ``DB_ERROR``; batches are capped at
256 points. Point ids are UUIDs derived from the (namespaced) chunk id, which is kept in the payload
(``_id``); metadata is stored nested (``source.uri`` → ``{"source": {"uri": ...}}``) so that
Qdrant's dotted keys address it in filters. The collection's metadata records the model.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.stores import (
    ABSENT,
    Compare,
    Filter,
    Logic,
    Metadata,
    RetryingClient,
    StoreHit,
    and_filters,
    model_mismatch,
    namespace_filter,
    parse_where,
    secret_env,
    store_error,
    translating,
    with_namespace,
)
from indexfoundry.errors import DbError, missing_extra
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.layout import RunLayout

ID_KEY = "_id"
TEXT_KEY = "_text"

# Local mode locks its folder: one client per folder per process, shared by every store object.
_local_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def transient(exc: BaseException) -> bool:
    """A network error or an overloaded server: worth retrying (and a recoverable DB_ERROR)."""
    name = type(exc).__name__.lower()
    if getattr(exc, "status_code", None) in _TRANSIENT_STATUS:
        return True
    return any(word in name for word in ("connect", "timeout", "unavailable", "responsehandling"))


def _db_error(action: str, exc: BaseException) -> DbError:
    recoverable = transient(exc)
    return store_error(
        "Qdrant",
        action,
        exc,
        recoverable=recoverable,
        suggestion="Check that the Qdrant server is reachable (or the local folder is not in use), then rerun",
    )


def point_id(stored_id: str) -> str:
    """A stable UUID for a stored id (Qdrant ids are integers or UUIDs)."""
    return str(uuid.UUID(hex=hashlib.sha256(stored_id.encode("utf-8")).hexdigest()[:32]))


def nest(metadata: Metadata) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted(metadata):
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = metadata[key]
    return out


def flatten(payload: dict[str, Any], prefix: str = "") -> Metadata:
    out: Metadata = {}
    for key, value in payload.items():
        if not prefix and key in (ID_KEY, TEXT_KEY):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, str | int | float | bool):
            out[name] = value
    return out


def to_qdrant_filter(flt: Filter | None) -> Any:
    """Our filter tree → ``qdrant_client.models.Filter`` (missing fields never match)."""
    from qdrant_client import models

    if flt is None:
        return None
    if isinstance(flt, Logic):
        subs = [to_qdrant_filter(part) for part in flt.parts]
        return models.Filter(must=subs) if flt.op == "$and" else models.Filter(should=subs)
    assert isinstance(flt, Compare)
    key, op, value = flt.field, flt.op, flt.value
    empty = models.IsEmptyCondition(is_empty=models.PayloadField(key=key))
    if op == ABSENT:
        return models.Filter(must=[empty])

    def equal(v: Any) -> Any:
        if isinstance(v, float) and not isinstance(v, bool):
            return models.FieldCondition(key=key, range=models.Range(gte=v, lte=v))
        return models.FieldCondition(key=key, match=models.MatchValue(value=v))

    if op == "$eq":
        return models.Filter(must=[equal(value)])
    if op == "$ne":
        return models.Filter(must_not=[equal(value), empty])
    if op == "$in":
        return models.Filter(should=[equal(v) for v in value]) if value else models.Filter(must=[empty, equal("")])
    if op == "$nin":
        return models.Filter(must_not=[*(equal(v) for v in value), empty])
    bounds = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
    return models.Filter(must=[models.FieldCondition(key=key, range=models.Range(**{bounds[op]: value}))])


class QdrantStore:
    def __init__(self, config: VectorDbConfig, default_path: Path) -> None:
        try:
            from qdrant_client import QdrantClient
        except ImportError:
            raise missing_extra("qdrant-client", "qdrant", "the qdrant vector store") from None
        self.config = config
        self.name = config.collection
        self.namespace = config.namespace
        conn = config.connection
        self.remote = bool(conn.get("url") or conn.get("host"))
        with translating(_db_error, "connection"):
            if self.remote:
                client = QdrantClient(
                    url=conn.get("url"),
                    host=conn.get("host"),
                    port=int(conn.get("port", 6333)),
                    https=conn.get("https"),
                    api_key=secret_env(conn, "api_key_env", "qdrant"),
                    timeout=int(conn.get("timeout", 60)),
                    # The version check runs in a background thread whose failure only warns;
                    # a server that is away fails the first real call instead, with DB_ERROR.
                    check_compatibility=bool(conn.get("check_compatibility", False)),
                )
                # Network errors and 429/5xx answers are retried with backoff, then DB_ERROR (recoverable).
                self.client: Any = RetryingClient(client, transient, conn)
            else:
                path = Path(conn["path"]) if conn.get("path") else default_path
                path.mkdir(parents=True, exist_ok=True)
                key = str(path.resolve())
                with _clients_lock:
                    if key not in _local_clients:
                        _local_clients[key] = QdrantClient(path=key)
                    self.client = _local_clients[key]

    def _sid(self, chunk_id: str) -> str:
        return f"{self.namespace}/{chunk_id}" if self.namespace else chunk_id

    def _scope(self, flt: Filter | None = None) -> Any:
        return to_qdrant_filter(and_filters(namespace_filter(self.namespace), flt))

    def _exists(self) -> bool:
        with translating(_db_error, "collection check"):
            return bool(self.client.collection_exists(self.name))

    def _require(self) -> None:
        if not self._exists():
            raise DbError(f"collection '{self.name}' does not exist", suggestion="Run the index phase first")

    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None:
        from qdrant_client import models

        with translating(_db_error, "open collection"):
            if reset and not self.namespace and self._exists():
                self.client.delete_collection(self.name)
            if not self._exists():
                self.client.create_collection(
                    self.name,
                    vectors_config=models.VectorParams(size=dimensions, distance=models.Distance.COSINE),
                    metadata={"embedding_model": model_id, "dimensions": dimensions},
                )
            info = self.client.get_collection(self.name)
        meta = info.config.metadata or {}
        params = info.config.params.vectors
        size = getattr(params, "size", None)
        error = model_mismatch(
            self.name, meta.get("embedding_model"), meta.get("dimensions", size), model_id, dimensions
        )
        if error is not None:
            raise error
        if reset and self.namespace:
            self.delete(self.all_ids())

    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        if not ids or not self._exists():
            return {}
        out: dict[str, Metadata] = {}
        with translating(_db_error, "retrieve"):
            for start in range(0, len(ids), 1000):
                batch = ids[start : start + 1000]
                points = self.client.retrieve(
                    self.name, ids=[point_id(self._sid(i)) for i in batch], with_payload=True, with_vectors=False
                )
                for point in points:
                    payload = point.payload or {}
                    out[str(payload.get(ID_KEY))] = flatten(payload)
        return out

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        from qdrant_client import models

        matrix = np.asarray(vectors, dtype=np.float32)
        points = []
        for i, (cid, meta) in enumerate(zip(ids, with_namespace(metadatas, self.namespace), strict=True)):
            payload = nest(meta)
            payload[ID_KEY] = cid
            if texts is not None:
                payload[TEXT_KEY] = texts[i]
            points.append(models.PointStruct(id=point_id(self._sid(cid)), vector=matrix[i].tolist(), payload=payload))
        with translating(_db_error, "upsert"):
            self.client.upsert(self.name, points=points, wait=True)

    def all_ids(self) -> list[str]:
        self._require()
        ids: list[str] = []
        offset: Any = None
        with translating(_db_error, "scroll"):
            while True:
                points, offset = self.client.scroll(
                    self.name,
                    scroll_filter=self._scope(),
                    limit=1000,
                    offset=offset,
                    with_payload=[ID_KEY],
                    with_vectors=False,
                )
                ids.extend(str((p.payload or {}).get(ID_KEY)) for p in points)
                if offset is None:
                    break
        return sorted(ids)

    def delete(self, ids: list[str]) -> None:
        from qdrant_client import models

        with translating(_db_error, "delete"):
            for start in range(0, len(ids), 1000):
                batch = [point_id(self._sid(i)) for i in ids[start : start + 1000]]
                if batch:
                    self.client.delete(self.name, points_selector=models.PointIdsList(points=batch), wait=True)

    def count(self) -> int:
        self._require()
        with translating(_db_error, "count"):
            return int(self.client.count(self.name, count_filter=self._scope(), exact=True).count)

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        self._require()
        with translating(_db_error, "query"):
            result = self.client.query_points(
                self.name,
                query=np.asarray(vector, dtype=np.float32).reshape(-1).tolist(),
                limit=top_k,
                query_filter=self._scope(parse_where(where)),
                with_payload=True,
            )
        hits = []
        for point in result.points:
            payload = point.payload or {}
            text = payload.get(TEXT_KEY)
            hits.append(
                StoreHit(
                    id=str(payload.get(ID_KEY)),
                    score=float(point.score),
                    text=text if isinstance(text, str) else None,
                    metadata=flatten(payload),
                )
            )
        return hits

    def max_batch_size(self) -> int:
        # Qdrant servers refuse requests over 32 MB by default; 256 points of 3072 floats
        # plus text stay well under it.
        return 256

    def close(self) -> None:
        if self.remote:
            self.client.close()


def close_local_clients() -> None:
    """Release every local-mode folder this process holds (tests, long-lived servers)."""
    with _clients_lock:
        for client in _local_clients.values():
            client.close()
        _local_clients.clear()


def open_store(config: VectorDbConfig, layout: RunLayout) -> QdrantStore:
    """Open Qdrant: local mode in the run (or ``connection.path``), or a server (``url``/``host``)."""
    return QdrantStore(config, layout.qdrant_dir)
