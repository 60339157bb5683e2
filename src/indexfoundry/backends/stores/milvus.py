"""Milvus through ``pymilvus`` (extra ``milvus``).

Connection: ``{uri}`` — a Milvus Lite file (default: ``indexed/milvus.db`` in the run) or a
server URL (``http://host:19530``), with ``token_env`` naming the variable holding its token
and optional ``db_name`` and ``index_type`` (``FLAT`` for Milvus Lite, ``AUTOINDEX`` for a
server by default). Rows: ``id`` (namespaced chunk id), ``vector`` (cosine), ``text``,
``metadata`` (JSON, read back as is) and one dynamic field per metadata key, used by filters
(Milvus filter expressions address plain field names only). The collection's properties
record the model. A server's connection and calls are retried on network errors
(``max_retries``, default 3; ``backoff_ms``, default 500), then fail with a recoverable
``DB_ERROR``; insert requests are split to stay under 16 MB.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.stores import (
    Compare,
    Filter,
    Logic,
    Metadata,
    RetryingClient,
    StoreHit,
    and_filters,
    checked_query,
    in_namespace,
    model_mismatch,
    namespace_filter,
    parse_where,
    retrying,
    secret_env,
    store_error,
    translating,
    with_namespace,
)
from indexfoundry.errors import ConfigInvalid, DbError, missing_extra
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import RunLayout

_NAME_OK = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
MODEL_PROPERTY = "indexfoundry.embedding_model"
DIMS_PROPERTY = "indexfoundry.dimensions"
MAX_TEXT_BYTES = 65535
# Milvus caps a search's limit (topk).
MAX_LIMIT = 16384
# Milvus refuses gRPC messages over 64 MB; keep each insert request far below it.
MAX_REQUEST_BYTES = 16 * 1024 * 1024

_lite_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def transient(exc: BaseException) -> bool:
    """A server that cannot be reached or is overloaded: worth retrying (a recoverable DB_ERROR)."""
    text = " ".join(str(exc).split()).lower()
    return any(word in text for word in ("unavailable", "timeout", "deadline", "connect", "rate limit"))


def _db_error(action: str, exc: BaseException) -> DbError:
    recoverable = transient(exc)
    return store_error(
        "Milvus",
        action,
        exc,
        recoverable=recoverable,
        suggestion="Check that the Milvus server (or the Milvus Lite file) is reachable, then rerun",
    )


def field_name(key: str) -> str:
    """Dynamic field holding metadata ``key`` (injective: readable part + hash of the key)."""
    return "m_" + re.sub(r"[^0-9A-Za-z]", "_", key)[:40] + "_" + sha256_text(key)[:8]


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def to_milvus_expr(flt: Filter | None) -> str:
    """Our filter tree → a Milvus boolean expression ('' for none)."""
    if flt is None:
        return ""
    if isinstance(flt, Logic):
        joiner = " and " if flt.op == "$and" else " or "
        return "(" + joiner.join(to_milvus_expr(part) for part in flt.parts) + ")"
    assert isinstance(flt, Compare)
    name = field_name(flt.field)
    if flt.op in ("$in", "$nin"):
        values = "[" + ", ".join(_literal(v) for v in flt.value) + "]"
        return f"({name} {'in' if flt.op == '$in' else 'not in'} {values})"
    ops = {"$eq": "==", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
    return f"({name} {ops[flt.op]} {_literal(flt.value)})"


def _clip(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= MAX_TEXT_BYTES:
        return text
    return data[:MAX_TEXT_BYTES].decode("utf-8", errors="ignore")


class MilvusStore:
    def __init__(self, config: VectorDbConfig, default_file: Path) -> None:
        try:
            from pymilvus import MilvusClient
        except ImportError:
            raise missing_extra("pymilvus", "milvus", "the milvus vector store") from None
        if not _NAME_OK.fullmatch(config.collection):
            raise ConfigInvalid(
                f"collection name '{config.collection}' is not valid for Milvus",
                suggestion="Use letters, digits and underscores, starting with a letter or underscore",
            )
        self.config = config
        self.name = config.collection
        self.namespace = config.namespace
        conn = config.connection
        uri = str(conn.get("uri") or default_file)
        self.remote = "://" in uri
        with translating(_db_error, "connection"):
            if self.remote:
                kwargs: dict[str, Any] = {"uri": uri}
                token = secret_env(conn, "token_env", "milvus")
                if token:
                    kwargs["token"] = token
                if conn.get("db_name"):
                    kwargs["db_name"] = str(conn["db_name"])
                # MilvusClient connects at once; it and every call are retried on network errors.
                self.client: Any = RetryingClient(retrying(MilvusClient, transient, conn)(**kwargs), transient, conn)
            else:
                path = Path(uri)
                path.parent.mkdir(parents=True, exist_ok=True)
                key = str(path.resolve())
                with _clients_lock:
                    if key not in _lite_clients:
                        _lite_clients[key] = MilvusClient(key)
                    self.client = _lite_clients[key]
        self.index_type = str(conn.get("index_type") or ("AUTOINDEX" if self.remote else "FLAT"))
        self._loaded = False

    def _sid(self, chunk_id: str) -> str:
        return f"{self.namespace}/{chunk_id}" if self.namespace else chunk_id

    def _cid(self, stored: str) -> str:
        return stored.split("/", 1)[1] if self.namespace and "/" in stored else stored

    def _scope(self, flt: Filter | None = None) -> str:
        # "No namespace" is not expressible on a dynamic field: those reads check metadata instead.
        return to_milvus_expr(and_filters(namespace_filter(self.namespace) if self.namespace else None, flt))

    def _exists(self) -> bool:
        with translating(_db_error, "collection check"):
            return bool(self.client.has_collection(self.name))

    def _require(self) -> None:
        if not self._exists():
            raise DbError(f"collection '{self.name}' does not exist", suggestion="Run the index phase first")
        if not self._loaded:
            with translating(_db_error, "load collection"):
                self.client.load_collection(self.name)
            self._loaded = True

    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None:
        from pymilvus import DataType

        with translating(_db_error, "open collection"):
            if reset and not self.namespace and self._exists():
                self.client.drop_collection(self.name)
            if not self._exists():
                schema = self.client.create_schema(auto_id=False, enable_dynamic_field=True)
                schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=512)
                schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimensions)
                schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES)
                schema.add_field("metadata", DataType.JSON)
                index = self.client.prepare_index_params()
                index.add_index("vector", index_type=self.index_type, metric_type="COSINE")
                self.client.create_collection(
                    self.name,
                    schema=schema,
                    index_params=index,
                    consistency_level="Strong",
                    properties={MODEL_PROPERTY: model_id, DIMS_PROPERTY: str(dimensions)},
                )
            described = self.client.describe_collection(self.name)
        props = described.get("properties") or {}
        dims: Any = props.get(DIMS_PROPERTY)
        for field in described.get("fields", []):
            if field.get("name") == "vector":
                dims = field.get("params", {}).get("dim", dims)
        error = model_mismatch(self.name, props.get(MODEL_PROPERTY), dims, model_id, dimensions)
        if error is not None:
            raise error
        self._require()
        if reset and self.namespace:
            self.delete(self.all_ids())

    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        if not ids or not self._exists():
            return {}
        self._require()
        out: dict[str, Metadata] = {}
        with translating(_db_error, "get"):
            for start in range(0, len(ids), 1000):
                rows = self.client.get(
                    self.name, ids=[self._sid(i) for i in ids[start : start + 1000]], output_fields=["metadata"]
                )
                for row in rows:
                    out[self._cid(str(row["id"]))] = dict(row.get("metadata") or {})
        return out

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        self._require()
        matrix = np.asarray(vectors, dtype=np.float32)
        rows: list[dict[str, Any]] = []
        size = 0
        for i, (cid, meta) in enumerate(zip(ids, with_namespace(metadatas, self.namespace), strict=True)):
            row: dict[str, Any] = {
                "id": self._sid(cid),
                "vector": matrix[i].tolist(),
                "text": _clip(texts[i]) if texts is not None else "",
                "metadata": dict(meta),
            }
            for key, value in meta.items():
                row[field_name(key)] = value
            row_size = matrix.shape[1] * 4 + len(row["text"].encode("utf-8")) + len(json.dumps(meta)) * 2
            if rows and size + row_size > MAX_REQUEST_BYTES:
                self._write(rows)
                rows, size = [], 0
            rows.append(row)
            size += row_size
        if rows:
            self._write(rows)

    def _write(self, rows: list[dict[str, Any]]) -> None:
        with translating(_db_error, "upsert"):
            self.client.upsert(self.name, data=rows)

    def all_ids(self) -> list[str]:
        self._require()
        ids: list[str] = []
        with translating(_db_error, "list ids"):
            iterator = self.client.query_iterator(
                self.name,
                batch_size=1000,
                filter=self._scope(),
                output_fields=["id"] if self.namespace else ["id", "metadata"],
            )
            try:
                while True:
                    rows = iterator.next()
                    if not rows:
                        break
                    ids.extend(
                        self._cid(str(r["id"]))
                        for r in rows
                        if self.namespace or in_namespace(r.get("metadata") or {}, None)
                    )
            finally:
                iterator.close()
        return sorted(ids)

    def delete(self, ids: list[str]) -> None:
        if not ids:
            return
        self._require()
        with translating(_db_error, "delete"):
            for start in range(0, len(ids), 1000):
                self.client.delete(self.name, ids=[self._sid(i) for i in ids[start : start + 1000]])

    def count(self) -> int:
        return len(self.all_ids())

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        self._require()
        flt = parse_where(where)
        return checked_query(lambda n: self._search(vector, n, flt), top_k, flt, self.namespace, MAX_LIMIT)

    def _search(self, vector: Vectors, top_k: int, flt: Filter | None) -> list[StoreHit]:
        with translating(_db_error, "search"):
            result = self.client.search(
                self.name,
                data=[np.asarray(vector, dtype=np.float32).reshape(-1).tolist()],
                limit=top_k,
                filter=self._scope(flt),
                output_fields=["text", "metadata"],
                search_params={"metric_type": "COSINE"},
            )
        hits = []
        for hit in result[0] if result else []:
            entity = hit.get("entity", {})
            text = entity.get("text")
            hits.append(
                StoreHit(
                    id=self._cid(str(hit["id"])),
                    score=float(hit["distance"]),
                    text=text if text else None,
                    metadata=dict(entity.get("metadata") or {}),
                )
            )
        return hits

    def max_batch_size(self) -> int:
        return 1000

    def close(self) -> None:
        if self.remote:
            self.client.close()


def close_lite_clients() -> None:
    """Release every Milvus Lite file this process holds (tests, long-lived servers)."""
    with _clients_lock:
        for client in _lite_clients.values():
            client.close()
        _lite_clients.clear()


def open_store(config: VectorDbConfig, layout: RunLayout) -> MilvusStore:
    """Open Milvus: a Milvus Lite file in the run (or ``connection.uri``), or a server URI."""
    return MilvusStore(config, layout.milvus_file)
