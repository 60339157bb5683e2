"""Chroma: embedded persistent client by default, ``HttpClient`` when host/port are configured.

Vectors are always precomputed (``embedding_function=None``): Chroma never embeds, so it
never tries to download a model. With a namespace, stored ids are ``<namespace>/<chunk id>``
(ids are unique per collection) and a ``namespace`` metadata key scopes every read.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.stores import (
    NAMESPACE_KEY,
    Metadata,
    StoreHit,
    checked_query,
    in_namespace,
    model_mismatch,
    parse_where,
    secret_env,
    store_error,
    translating,
    with_namespace,
)
from indexfoundry.errors import ConfigInvalid, DbError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.layout import RunLayout

# Most hits one query asks for while looking for top_k that pass the shared filter rule.
MAX_LIMIT = 100000
_NAME_OK = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")

# One HTTP client per server and process: each holds a connection pool, and the search
# service opens a store per request.
_http_clients: dict[tuple[str, int, bool, str], Any] = {}
_clients_lock = threading.Lock()


def close_http_clients() -> None:
    """Close the pooled connections to Chroma servers (tests, before stopping a server)."""
    with _clients_lock:
        for client in _http_clients.values():
            # chromadb's close() releases the shared System but leaves its httpx session open.
            session = getattr(getattr(client, "_server", None), "_session", None)
            client.close()
            if session is not None:
                session.close()
        _http_clients.clear()


# Words of a failure that may pass by itself: the server is away, or the disk is full.
_TRANSIENT_NAMES = ("connect", "timeout", "unavailable")
_STORAGE_FULL = ("disk is full", "disk i/o error", "file too large", "no space left", "quota exceeded")


def _db_error(action: str, exc: BaseException) -> DbError:
    message = " ".join(str(exc).split())
    lowered = message.lower()
    full = any(words in lowered for words in _STORAGE_FULL)
    recoverable = full or "connect" in lowered or any(w in type(exc).__name__.lower() for w in _TRANSIENT_NAMES)
    return store_error(
        "Chroma",
        action,
        exc,
        recoverable=recoverable,
        suggestion=(
            "Free disk space, then rerun the same run (--run-id) to resume it"
            if full
            else "Check that the Chroma server is reachable, then rerun the index phase"
        ),
    )


class ChromaStore:
    def __init__(self, config: VectorDbConfig, default_path: Path, run_root: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        if not _NAME_OK.fullmatch(config.collection):
            raise ConfigInvalid(
                f"collection name '{config.collection}' is not valid for Chroma",
                suggestion="Use 3-512 characters from a-z A-Z 0-9 . _ -, starting and ending alphanumeric",
            )
        self.config = config
        self.namespace = config.namespace
        conn = config.connection
        settings = Settings(anonymized_telemetry=False)
        with translating(_db_error, "connection"):
            if "host" in conn:
                headers = {}
                token = secret_env(conn, "api_key_env", "chroma")
                if token:
                    headers["Authorization"] = f"Bearer {token}"
                key = (str(conn["host"]), int(conn.get("port", 8000)), bool(conn.get("ssl", False)), token or "")
                with _clients_lock:
                    if key not in _http_clients:
                        _http_clients[key] = chromadb.HttpClient(
                            host=key[0], port=key[1], ssl=key[2], headers=headers or None, settings=settings
                        )
                    self.client: Any = _http_clients[key]
            else:
                path = Path(conn.get("path", default_path))
                path.mkdir(parents=True, exist_ok=True)
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
        self._embedded = "host" not in conn
        self._collection: Any = None

    # ids: namespaced in the store, chunk ids outside
    def _sid(self, chunk_id: str) -> str:
        return f"{self.namespace}/{chunk_id}" if self.namespace else chunk_id

    def _cid(self, stored: str) -> str:
        return stored.split("/", 1)[1] if self.namespace and "/" in stored else stored

    def _where(self, where: dict[str, Any] | None) -> dict[str, Any] | None:
        clauses: list[dict[str, Any]] = []
        if self.namespace:
            clauses.append({NAMESPACE_KEY: {"$eq": self.namespace}})
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
                    f"collection '{self.config.collection}' does not exist: {' '.join(str(exc).split())[:200]}",
                    suggestion="Run the index phase first",
                ) from None
        return self._collection

    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None:
        if reset and not self.namespace:
            with translating(_db_error, "drop collection"):
                names = [c if isinstance(c, str) else c.name for c in self.client.list_collections()]
                if self.config.collection in names:
                    self.client.delete_collection(self.config.collection)
        with translating(_db_error, "open collection"):
            self._collection = self.client.get_or_create_collection(
                self.config.collection,
                embedding_function=None,
                metadata={"hnsw:space": "cosine", "embedding_model": model_id, "dimensions": dimensions},
            )
        meta = self._collection.metadata or {}
        error = model_mismatch(
            self.config.collection, meta.get("embedding_model"), meta.get("dimensions"), model_id, dimensions
        )
        if error is not None:
            raise error
        if reset and self.namespace:
            self.delete(self.all_ids())

    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        out: dict[str, Metadata] = {}
        with translating(_db_error, "get"):
            # A new (or emptied) collection holds nothing: a first run skips looking up every id.
            if not ids or self.collection.count() == 0:
                return out
            for start in range(0, len(ids), 1000):
                batch = [self._sid(i) for i in ids[start : start + 1000]]
                got = self.collection.get(ids=batch, include=["metadatas"])
                for sid, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
                    out[self._cid(sid)] = dict(meta or {})
        return out

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        with translating(_db_error, "upsert"):
            self.collection.upsert(
                ids=[self._sid(i) for i in ids],
                embeddings=np.asarray(vectors, dtype=np.float32),
                documents=texts,
                metadatas=with_namespace(metadatas, self.namespace),
            )

    def all_ids(self) -> list[str]:
        ids: list[str] = []
        page = 10000
        offset = 0
        with translating(_db_error, "list ids"):
            # Ids only (reading every vector's metadata was ~30x slower). Without a namespace, the
            # vectors of namespaces share the collection: their stored ids are "<namespace>/<id>",
            # so only ids holding a "/" need their metadata read to be told apart.
            while True:
                got = self.collection.get(where=self._where(None), include=[], limit=page, offset=offset)
                offset += len(got["ids"])
                ids.extend(got["ids"])
                if len(got["ids"]) < page:
                    break
            if not self.namespace:
                slashed = [sid for sid in ids if "/" in sid]
                if slashed:
                    namespaced = set(slashed) - set(self._without_namespace(slashed))
                    ids = [sid for sid in ids if sid not in namespaced]
        return sorted(self._cid(i) for i in ids)

    def _without_namespace(self, stored: list[str]) -> list[str]:
        """Those of ``stored`` whose metadata has no namespace key."""
        out: list[str] = []
        for start in range(0, len(stored), 1000):
            got = self.collection.get(ids=stored[start : start + 1000], include=["metadatas"])
            metas = got.get("metadatas") or [None] * len(got["ids"])
            out.extend(sid for sid, meta in zip(got["ids"], metas, strict=True) if in_namespace(meta or {}, None))
        return out

    def delete(self, ids: list[str]) -> None:
        with translating(_db_error, "delete"):
            for start in range(0, len(ids), 1000):
                batch = [self._sid(i) for i in ids[start : start + 1000]]
                if batch:
                    self.collection.delete(ids=batch)

    def count(self) -> int:
        return len(self.all_ids())

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        # Chroma answers a request for more hits than it holds with all it has.
        flt = parse_where(where)
        return checked_query(lambda n: self._query(vector, n, where), top_k, flt, self.namespace, MAX_LIMIT)

    def _query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None) -> list[StoreHit]:
        with translating(_db_error, "query"):
            result = self.collection.query(
                query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
                n_results=top_k,
                where=self._where(where),
                include=["distances", "metadatas", "documents"],
            )
        hits: list[StoreHit] = []
        ids = result["ids"][0]
        docs = result.get("documents")
        metas = result.get("metadatas")
        for i, sid in enumerate(ids):
            distance = float(result["distances"][0][i])
            hits.append(
                StoreHit(
                    id=self._cid(sid),
                    score=1.0 - distance,
                    text=docs[0][i] if docs else None,
                    metadata=dict(metas[0][i] or {}) if metas else {},
                )
            )
        return hits

    def query_scores(self, vector: Vectors, top_k: int) -> list[tuple[str, float]]:
        """(chunk id, score) of the ``top_k`` nearest vectors, no filter, best first, as ``query``
        ranks them but without reading any metadata or text: at 50 hits over 10k chunks Chroma
        answered in 3.3 ms instead of 14.8 (``docs/benchmarks.md``). A namespace is the store's
        own where clause; without one, namespaced vectors are told apart by their stored id
        (``<namespace>/<chunk id>``: chunk ids are hex digests, never holding a '/')."""
        where = self._where(None)
        n = top_k
        while True:
            with translating(_db_error, "query"):
                result = self.collection.query(
                    query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
                    n_results=n,
                    where=where,
                    include=["distances"],
                )
            ids = result["ids"][0]
            distances = result["distances"][0] if result.get("distances") else []
            kept = [
                (self._cid(sid), 1.0 - float(distance))
                for sid, distance in zip(ids, distances, strict=True)
                if self.namespace or "/" not in sid
            ]
            if len(kept) >= top_k or len(ids) < n or n >= MAX_LIMIT:
                return kept[:top_k]
            n = min(MAX_LIMIT, n * 4)

    def max_batch_size(self) -> int:
        try:
            return int(self.client.get_max_batch_size())
        except Exception:  # older servers have no such endpoint: use a size every version accepts
            return 1000

    def close(self) -> None:
        """Release an embedded store's files (chromadb counts its clients per folder and stops
        the folder's system, writing what it holds, when the last one closes); a server's
        pooled client stays open for the next request."""
        if self._embedded:
            self.client.close()


def open_store(config: VectorDbConfig, layout: RunLayout) -> ChromaStore:
    """Open Chroma: embedded in the run (or ``connection.path``), or a server (``host``/``port``)."""
    return ChromaStore(config, layout.chroma_dir, layout.root)
