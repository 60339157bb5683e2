"""Weaviate through the official ``weaviate-client`` v4 (extra ``weaviate``): REST for the
schema, gRPC for batch writes, queries, counts and deletes.

Connection: ``{url}`` — the REST endpoint (``http://host:8080``, ``https://<cluster>.weaviate.cloud``)
— and optionally ``grpc_url`` (default: the same host on port 50051, secure when ``url`` is
https), ``api_key_env`` naming the variable holding an API key, ``timeout`` (s, default 30).
The client is opened with ``skip_init_checks`` (its start-up check asks PyPI for the latest
client version, which IndexFoundry never does); ``/v1/.well-known/ready`` is checked instead.

Layout: one Weaviate collection per IndexFoundry collection and namespace
(``If_<collection>_<namespace>_<hash>``, so namespaces never collide), vectors self-provided
(vectorizer ``none``, HNSW, cosine), null state indexed. Objects have the uuid5 of the chunk id
and the properties ``if_chunk_id`` and ``if_text`` (the chunk text when ``store_text``); each
metadata key is a property per value type — ``m<t|i|n|b>_<encoded key>`` for text, int, number
and boolean values, the key encoded reversibly into Weaviate's ``[_0-9a-z]`` names
(``source.uri`` → ``mt_source_duri``) — declared before the first object that uses it, so a
key may hold values of several types across chunks. The embedding model and dimensions are the
collection's description. (The names: ``weaviate_schema.py``.)

Filters go to Weaviate as its own filters (``$eq $ne $gt $gte $lt $lte $in $nin $and $or``;
a missing field never matches, so ``$ne``/``$nin`` add "has a value": ``like('*')`` on text, a
range every value meets on numbers); what cannot be sent exactly (ranges on text,
``$contains``, boolean values: weaviate-client 4.15 under protobuf 7 cannot encode a boolean
filter value) is left out of the pushed filter, which only loosens it, and every hit is
re-checked with the shared rule (``stores.matches``), fetching more until ``top_k`` pass. (The
translation: ``weaviate_filters.py``.)

Tested against a local emulator of Weaviate's REST and gRPC APIs
(``tests/emulators/weaviate.py``), not a live Weaviate server.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

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
from indexfoundry.backends.stores.weaviate_filters import filter_fields, to_filter
from indexfoundry.backends.stores.weaviate_schema import (
    ID_PROPERTY,
    TEXT_PROPERTY,
    TYPES,
    chunk_uuid,
    collection_name,
    metadata_of,
    property_name,
    typed_properties,
)
from indexfoundry.errors import ConfigInvalid, DbError, missing_extra
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.layout import RunLayout

# Weaviate's QUERY_MAXIMUM_RESULTS default: no query or delete reaches further.
MAX_RESULTS = 10_000


def _transient(exc: BaseException) -> bool:
    """A lost or refused connection, a timeout, 429/5xx: a rerun may pass."""
    import grpc
    import httpx

    seen: BaseException | None = exc
    while seen is not None:
        name = type(seen).__name__
        if name in ("WeaviateRetryError", "WeaviateConnectionError", "WeaviateTimeoutError", "WeaviateStartUpError"):
            return True
        if isinstance(seen, httpx.TransportError | ConnectionError | TimeoutError):
            return True
        if (
            isinstance(seen, grpc.RpcError)
            and hasattr(seen, "code")
            and seen.code()
            in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED)
        ):
            return True
        status = getattr(seen, "status_code", None)
        if isinstance(status, int) and (status == 429 or status >= 500):
            return True
        message = str(seen)
        if "StatusCode.UNAVAILABLE" in message or "failed to connect" in message.lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _db_error(action: str, exc: BaseException) -> DbError:
    recoverable = _transient(exc)
    return store_error(
        "Weaviate",
        action,
        exc,
        recoverable=recoverable,
        suggestion=(
            "Check that the Weaviate server is reachable, then rerun the same run (--run-id) to resume it"
            if recoverable
            else "Check vector_db.connection (url, grpc_url, api_key_env) and the collection's schema"
        ),
    )


def _endpoint(url: str, what: str) -> tuple[str, int, bool]:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigInvalid(
            f"weaviate: vector_db.connection.{what} must be an http(s) URL, got '{url}'",
            suggestion="Set connection: {url: 'http://localhost:8080'}",
        )
    secure = parsed.scheme == "https"
    default = (443 if secure else 8080) if what == "url" else (443 if secure else 50051)
    return parsed.hostname, parsed.port or default, secure


class WeaviateStore:
    """One IndexFoundry collection+namespace as one Weaviate collection."""

    def __init__(self, config: VectorDbConfig) -> None:
        try:
            import weaviate
            from weaviate.classes.init import AdditionalConfig, Auth, Timeout
        except ImportError:
            raise missing_extra("weaviate-client", "weaviate", "the weaviate vector store") from None
        conn = config.connection
        if not conn.get("url"):
            raise ConfigInvalid(
                "weaviate needs vector_db.connection.url (the REST endpoint)",
                suggestion="Set connection: {url: 'http://localhost:8080', grpc_url: 'http://localhost:50051'}",
            )
        http_host, http_port, http_secure = _endpoint(str(conn["url"]), "url")
        if conn.get("grpc_url"):
            grpc_host, grpc_port, grpc_secure = _endpoint(str(conn["grpc_url"]), "grpc_url")
        else:
            grpc_host, grpc_port, grpc_secure = http_host, 443 if http_secure else 50051, http_secure
        api_key = secret_env(conn, "api_key_env", "weaviate")
        self.config = config
        self.collection = config.collection
        self.name = collection_name(config.collection, config.namespace)
        self._properties: dict[str, str] = {}
        timeout = float(conn.get("timeout", 30))
        with translating(_db_error, "connection"):
            self.client: Any = weaviate.connect_to_custom(
                http_host=http_host,
                http_port=http_port,
                http_secure=http_secure,
                grpc_host=grpc_host,
                grpc_port=grpc_port,
                grpc_secure=grpc_secure,
                auth_credentials=Auth.api_key(api_key) if api_key else None,
                additional_config=AdditionalConfig(timeout=Timeout(init=timeout, query=timeout, insert=timeout * 3)),
                # The client's own start-up checks ask PyPI for its latest version: never.
                skip_init_checks=True,
            )
        try:
            ready = bool(self.client.is_ready())
        except Exception as exc:
            self.client.close()
            raise _db_error("connection", exc) from None
        if not ready:
            self.client.close()
            raise DbError(
                f"Weaviate at {conn['url']} is not ready",
                recoverable=True,
                suggestion="Wait for the server to start, then rerun the same run (--run-id)",
            )
        self.handle: Any = self.client.collections.get(self.name)

    # ------------------------------------------------------------ schema
    def _load_schema(self) -> dict[str, Any] | None:
        """The collection's description record, refreshing the known properties; None if absent."""
        with translating(_db_error, "schema read"):
            if not self.client.collections.exists(self.name):
                return None
            config = self.handle.config.get(simple=True)
        self._properties = {p.name: p.data_type.value for p in config.properties}
        try:
            record = json.loads(config.description or "{}").get("indexfoundry", {})
        except ValueError:
            record = {}
        return record if isinstance(record, dict) else {}

    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None:
        from weaviate.classes.config import Configure, DataType, Property, Tokenization, VectorDistances

        held = self._load_schema()
        if held is not None and reset:
            with translating(_db_error, "delete collection"):
                self.client.collections.delete(self.name)
            held = None
        if held is not None:
            error = model_mismatch(
                self.collection, held.get("embedding_model"), held.get("dimensions"), model_id, dimensions
            )
            if error is not None:
                raise error
            return
        record = {
            "indexfoundry": {"embedding_model": model_id, "dimensions": dimensions, "collection": self.collection}
        }
        try:
            self.client.collections.create(
                self.name,
                description=json.dumps(record, sort_keys=True),
                vectorizer_config=Configure.Vectorizer.none(),
                vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE),
                inverted_index_config=Configure.inverted_index(index_null_state=True),
                properties=[
                    Property(
                        name=ID_PROPERTY,
                        data_type=DataType.TEXT,
                        tokenization=Tokenization.FIELD,
                        index_searchable=False,
                    ),
                    Property(name=TEXT_PROPERTY, data_type=DataType.TEXT, index_filterable=False),
                ],
            )
        except Exception as exc:
            # Another writer of the run may have created it first: then it must hold the same model.
            again = self._load_schema()
            if again is None:
                raise _db_error("create collection", exc) from None
            error = model_mismatch(
                self.collection, again.get("embedding_model"), again.get("dimensions"), model_id, dimensions
            )
            if error is not None:
                raise error from None
        self._load_schema()

    def _require(self) -> None:
        if self._load_schema() is None:
            raise DbError(
                f"collection '{self.collection}' does not exist in Weaviate ({self.name})",
                suggestion="Run the index phase first",
            )

    def _declare(self, names: dict[str, str]) -> None:
        """Add the metadata properties (name -> data type) the collection does not have yet."""
        from weaviate.classes.config import DataType, Property, Tokenization

        missing = {n: t for n, t in names.items() if n not in self._properties}
        if not missing:
            return
        self._load_schema()  # another writer may have added them
        for name, kind in sorted(missing.items()):
            if name in self._properties:
                continue
            prop = (
                Property(name=name, data_type=DataType.TEXT, tokenization=Tokenization.FIELD, index_searchable=False)
                if kind == "text"
                else Property(name=name, data_type=DataType(kind), index_range_filters=kind in ("int", "number"))
            )
            try:
                self.handle.config.add_property(prop)
            except Exception as exc:
                self._load_schema()
                if name not in self._properties:
                    raise _db_error("add property", exc) from None
            self._properties[name] = kind

    # ------------------------------------------------------------ protocol
    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        from weaviate.classes.query import Filter

        if not ids or self._load_schema() is None:
            return {}
        out: dict[str, Metadata] = {}
        with translating(_db_error, "fetch"):
            for start in range(0, len(ids), 100):
                part = [chunk_uuid(i) for i in ids[start : start + 100]]
                result = self.handle.query.fetch_objects(filters=Filter.by_id().contains_any(part), limit=len(part))
                for obj in result.objects:
                    out[str(obj.properties[ID_PROPERTY])] = metadata_of(obj.properties)
        return out

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        from weaviate.classes.data import DataObject

        matrix = np.asarray(vectors, dtype=np.float32)
        declared: dict[str, str] = {}
        objects = []
        for i, cid in enumerate(ids):
            props: dict[str, Any] = {ID_PROPERTY: cid}
            if texts is not None:
                props[TEXT_PROPERTY] = texts[i]
            for key, value in metadatas[i].items():
                name = property_name(key, value)
                declared[name] = TYPES[name[1]]
                props[name] = value
            objects.append(DataObject(properties=props, uuid=chunk_uuid(cid), vector=matrix[i].tolist()))
        self._declare(declared)
        with translating(_db_error, "batch insert"):
            result = self.handle.data.insert_many(objects)
        if result.errors:
            first = next(iter(result.errors.values()))
            raise DbError(
                f"Weaviate refused {len(result.errors)} of {len(objects)} objects: {first.message[:300]}",
                suggestion="Check the collection's schema (vector dimensions, property types)",
            )

    def all_ids(self) -> list[str]:
        self._require()
        ids: list[str] = []
        after: Any = None
        with translating(_db_error, "list"):
            while True:
                page = self.handle.query.fetch_objects(limit=1000, after=after, return_properties=[ID_PROPERTY])
                ids.extend(str(obj.properties[ID_PROPERTY]) for obj in page.objects)
                if len(page.objects) < 1000:
                    break
                after = page.objects[-1].uuid
        return sorted(ids)

    def delete(self, ids: list[str]) -> None:
        from weaviate.classes.query import Filter

        with translating(_db_error, "delete"):
            for start in range(0, len(ids), 1000):
                part = [chunk_uuid(i) for i in ids[start : start + 1000]]
                self.handle.data.delete_many(where=Filter.by_id().contains_any(part))

    def count(self) -> int:
        self._require()
        with translating(_db_error, "count"):
            return int(self.handle.aggregate.over_all(total_count=True).total_count or 0)

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        from weaviate.classes.query import MetadataQuery

        flt = parse_where(where)
        # The schema is read once per store (a served run asks many queries), and again when the
        # filter names a field it does not know (another writer may have added its property).
        if not self._properties or any(not typed_properties(f, self._properties) for f in filter_fields(flt)):
            self._require()
        pushed = [to_filter(flt, self._properties)]
        q = np.asarray(vector, dtype=np.float32).reshape(-1).tolist()

        def search(n: int) -> Any:
            try:
                return self.handle.query.near_vector(
                    near_vector=q, limit=n, filters=pushed[0], return_metadata=MetadataQuery(distance=True)
                )
            except Exception as exc:
                if _transient(exc):
                    raise
            # Refused: the schema may have changed under a long-lived reader (a replace run
            # recreated the collection): read it again and ask once more.
            self._require()
            pushed[0] = to_filter(flt, self._properties)
            return self.handle.query.near_vector(
                near_vector=q, limit=n, filters=pushed[0], return_metadata=MetadataQuery(distance=True)
            )

        def run(n: int) -> list[StoreHit]:
            with translating(_db_error, "query"):
                result = search(n)
            hits = []
            for obj in result.objects:
                props = dict(obj.properties)
                distance = float(obj.metadata.distance or 0.0)
                hits.append(
                    StoreHit(
                        id=str(props.get(ID_PROPERTY)),
                        score=1.0 - distance,
                        text=props.get(TEXT_PROPERTY),
                        metadata=metadata_of(props),
                    )
                )
            return hits

        return checked_query(run, min(top_k, MAX_RESULTS), flt, None, MAX_RESULTS)

    def max_batch_size(self) -> int:
        return 500

    def close(self) -> None:
        self.client.close()


def open_store(config: VectorDbConfig, layout: RunLayout) -> WeaviateStore:
    """Open the Weaviate server at ``connection.url``."""
    return WeaviateStore(config)
