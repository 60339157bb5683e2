"""An in-memory emulator of a Weaviate server's REST and gRPC APIs, on 127.0.0.1.

What the official ``weaviate-client`` v4 sends for collections, batch insert, near-vector
queries with filters, fetches, counts and deletes, with the server's answers:

- REST (``/v1``): ``GET /meta``, ``GET /.well-known/ready`` and ``/live``, ``GET /schema``,
  ``POST /schema`` (create a collection; 422 if it exists), ``GET /schema/{name}`` (404 if
  missing), ``DELETE /schema/{name}``, ``POST /schema/{name}/properties`` (add a property; 422
  if it exists). Property and index defaults are filled in as the server does
  (``indexFilterable``/``indexSearchable``, ``tokenization: word`` for text).
- gRPC (``weaviate.v1.Weaviate``, served with the client's own generated stubs from
  ``weaviate.proto.v1``, so the wire format is the client's): ``BatchObjects`` (an existing
  uuid is replaced; properties are converted to their declared type, unknown ones added by
  auto-schema as the server does: text, number or boolean), ``Search`` (``near_vector`` with
  cosine distance, exact; or objects in uuid order with the ``after`` cursor; ``filters``;
  ``limit`` up to ``QUERY_MAXIMUM_RESULTS`` 10,000), ``BatchDelete`` (filters, at most 10,000
  matches per call, ``dry_run``), ``Aggregate`` (``objects_count`` with filters); and the
  standard ``grpc.health.v1`` service.

Filters follow the server's rules: the value's type must match the property's data type
(``valueInt`` for int, ``valueNumber`` for number, ``valueText`` for text and ``_id``,
``valueBoolean``); a property the collection does not have is an error; ``NotEqual`` also
matches an object without the property; ``IsNull`` needs ``indexNullState``; text ``Equal``
compares whole values under ``tokenization: field`` and words under ``word``; ``Like`` takes
``*``/``?`` wildcards over the whole value; range operators on text are refused here (the store
never sends them). With ``api_key`` set, every REST and gRPC
call needs ``Authorization: Bearer <key>``. ``stop()``/``start()`` take the server away and
bring it back on the same ports with its data.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import uuid as uuid_lib
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

import numpy as np

VERSION = "1.30.0"
QUERY_MAXIMUM_RESULTS = 10_000
_CLASS_NAME = re.compile(r"^[A-Z][_0-9A-Za-z]*$")
_PROPERTY_NAME = re.compile(r"^[_A-Za-z][_0-9A-Za-z]*$")
_WORD = re.compile(r"[0-9A-Za-z]+")


class EmulatorError(Exception):
    """A request the server refuses: (HTTP status, message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _property_defaults(prop: dict[str, Any]) -> dict[str, Any]:
    name = str(prop.get("name", ""))
    if not _PROPERTY_NAME.match(name) or name in ("id", "_id", "_additional", "vector"):
        raise EmulatorError(422, f"'{name}' is not a valid property name")
    data_type = prop.get("dataType") or []
    if not data_type or data_type[0] not in ("text", "int", "number", "boolean"):
        raise EmulatorError(422, f"property '{name}': data type {data_type} is not supported by this emulator")
    out = {
        "name": name,
        "dataType": [data_type[0]],
        "description": prop.get("description", ""),
        "indexFilterable": prop.get("indexFilterable", True),
        "indexSearchable": prop.get("indexSearchable", data_type[0] == "text"),
        "indexRangeFilters": prop.get("indexRangeFilters", False),
    }
    if data_type[0] == "text":
        out["tokenization"] = prop.get("tokenization") or "word"
    return out


def _class_defaults(body: dict[str, Any]) -> dict[str, Any]:
    name = str(body.get("class", ""))
    if not _CLASS_NAME.match(name):
        raise EmulatorError(422, f"'{name}' is not a valid class name")
    if body.get("vectorizer", "none") != "none" or "vectorConfig" in body:
        raise EmulatorError(422, "this emulator only serves collections with vectorizer 'none'")
    inverted = body.get("invertedIndexConfig") or {}
    hnsw = {
        "skip": False,
        "cleanupIntervalSeconds": 300,
        "maxConnections": 32,
        "efConstruction": 128,
        "ef": -1,
        "dynamicEfMin": 100,
        "dynamicEfMax": 500,
        "dynamicEfFactor": 8,
        "vectorCacheMaxObjects": 1000000000000,
        "flatSearchCutoff": 40000,
        "distance": "cosine",
        "filterStrategy": "sweeping",
        **(body.get("vectorIndexConfig") or {}),
    }
    return {
        "class": name,
        "description": body.get("description", ""),
        "properties": [_property_defaults(p) for p in body.get("properties") or []],
        "vectorizer": "none",
        "moduleConfig": body.get("moduleConfig") or {},
        "vectorIndexType": body.get("vectorIndexType", "hnsw"),
        "vectorIndexConfig": hnsw,
        "invertedIndexConfig": {
            "bm25": {"b": 0.75, "k1": 1.2},
            "cleanupIntervalSeconds": 60,
            "stopwords": {"preset": "en", "additions": None, "removals": None},
            "indexNullState": bool(inverted.get("indexNullState", False)),
            "indexPropertyLength": bool(inverted.get("indexPropertyLength", False)),
            "indexTimestamps": bool(inverted.get("indexTimestamps", False)),
            "usingBlockMaxWAND": True,
        },
        "multiTenancyConfig": {"enabled": False, "autoTenantCreation": False, "autoTenantActivation": False},
        "replicationConfig": {"factor": 1, "asyncEnabled": False, "deletionStrategy": "NoAutomatedResolution"},
        "shardingConfig": {
            "virtualPerPhysical": 128,
            "desiredCount": 1,
            "actualCount": 1,
            "desiredVirtualCount": 128,
            "actualVirtualCount": 128,
            "key": "_id",
            "strategy": "hash",
            "function": "murmur3",
        },
    }


class _Collection:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.objects: dict[str, tuple[np.ndarray[Any, Any], dict[str, Any]]] = {}
        self.dimensions: int | None = None

    def prop(self, name: str) -> dict[str, Any] | None:
        return next((p for p in self.schema["properties"] if p["name"] == name), None)


class WeaviateEmulator:
    """Collections of {uuid: (vector, properties)} behind Weaviate's REST and gRPC APIs."""

    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.collections: dict[str, _Collection] = {}
        self.requests: list[str] = []
        self.lock = threading.RLock()
        self.http_port = 0
        self.grpc_port = 0
        self.connections: set[Any] = set()
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._grpc: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._start_http()
        self._start_grpc()

    def stop(self) -> None:
        """Stop both servers and drop every open connection, as a dead server would."""
        if self._grpc is not None:
            self._grpc.stop(grace=None).wait(10)
            self._grpc = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        for sock in list(self.connections):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _authorized(self, header: str | None) -> bool:
        return self.api_key is None or header == f"Bearer {self.api_key}"

    def _start_http(self) -> None:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def setup(self) -> None:
                super().setup()
                emulator.connections.add(self.connection)

            def finish(self) -> None:
                emulator.connections.discard(self.connection)
                super().finish()

            def _reply(self, status: int, body: Any) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                path = urlparse(self.path).path
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not path.startswith("/v1/.well-known/") and not emulator._authorized(
                    self.headers.get("Authorization")
                ):
                    self._reply(401, {"code": 401, "message": "unauthorized: invalid api key"})
                    return
                emulator.requests.append(f"{method} {path}")
                try:
                    status, out = emulator.rest(method, path, json.loads(raw) if raw else {})
                except EmulatorError as exc:
                    status, out = exc.status, {"error": [{"message": str(exc)}]}
                self._reply(status, out)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PUT(self) -> None:
                self._handle("PUT")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

            def do_HEAD(self) -> None:
                self._handle("HEAD")

        ThreadingHTTPServer.allow_reuse_address = True
        self._http = ThreadingHTTPServer(("127.0.0.1", self.http_port), Handler)
        self._http.daemon_threads = True
        self.http_port = int(self._http.server_address[1])
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    def _start_grpc(self) -> None:
        import grpc
        from grpc_health.v1 import health, health_pb2, health_pb2_grpc
        from weaviate.proto.v1 import weaviate_pb2_grpc

        emulator = self

        def guarded(rpc: str, method: Any) -> Any:
            def call(request: Any, context: Any) -> Any:
                metadata = dict(context.invocation_metadata())
                if not emulator._authorized(metadata.get("authorization")):
                    context.abort(grpc.StatusCode.UNAUTHENTICATED, "unauthorized: invalid api key")
                emulator.requests.append(f"grpc {rpc}")
                try:
                    with emulator.lock:
                        return method(request)
                except EmulatorError as exc:
                    code = grpc.StatusCode.NOT_FOUND if exc.status == 404 else grpc.StatusCode.INVALID_ARGUMENT
                    context.abort(code, str(exc))

            return call

        class Servicer(weaviate_pb2_grpc.WeaviateServicer):  # type: ignore[misc]
            Search = staticmethod(guarded("Search", emulator._search))
            BatchObjects = staticmethod(guarded("BatchObjects", emulator._batch_objects))
            BatchDelete = staticmethod(guarded("BatchDelete", emulator._batch_delete))
            Aggregate = staticmethod(guarded("Aggregate", emulator._aggregate))

        if not self.grpc_port:
            self.grpc_port = _free_port()
        # The client's channel pings every 10 s even when idle; the server accepts that, as Weaviate does.
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8),
            options=[
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.min_ping_interval_without_data_ms", 5000),
                ("grpc.http2.max_ping_strikes", 0),
            ],
        )
        weaviate_pb2_grpc.add_WeaviateServicer_to_server(Servicer(), server)
        checker = health.HealthServicer()
        checker.set("", health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(checker, server)
        server.add_insecure_port(f"127.0.0.1:{self.grpc_port}")
        server.start()
        self._grpc = server

    # ------------------------------------------------------------ REST
    def _collection(self, name: str) -> _Collection:
        found = self.collections.get(name)
        if found is None:
            raise EmulatorError(404, f"could not find class {name} in schema")
        return found

    def rest(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            if path == "/v1/meta" and method == "GET":
                return 200, {
                    "hostname": f"http://[::]:{self.http_port}",
                    "modules": {},
                    "version": VERSION,
                    "grpcMaxMessageSize": 104858000,
                }
            if path in ("/v1/.well-known/ready", "/v1/.well-known/live"):
                return 200, None
            if path == "/v1/schema" and method == "GET":
                return 200, {"classes": [c.schema for c in self.collections.values()]}
            if path == "/v1/schema" and method == "POST":
                schema = _class_defaults(body)
                if schema["class"].lower() in (n.lower() for n in self.collections):
                    raise EmulatorError(422, f"class name {schema['class']} already exists")
                self.collections[schema["class"]] = _Collection(schema)
                return 200, schema
            parts = path.split("/")
            if len(parts) == 4 and parts[:3] == ["", "v1", "schema"]:
                if method == "GET":
                    return 200, self._collection(parts[3]).schema
                if method == "DELETE":
                    self.collections.pop(parts[3], None)
                    return 200, None
            if len(parts) == 5 and parts[:3] == ["", "v1", "schema"] and parts[4] == "properties" and method == "POST":
                collection = self._collection(parts[3])
                prop = _property_defaults(body)
                if collection.prop(prop["name"]) is not None:
                    raise EmulatorError(422, f"property '{prop['name']}' already exists")
                collection.schema["properties"].append(prop)
                return 200, prop
            raise EmulatorError(404, f"{method} {path} is not served by this emulator")

    # ------------------------------------------------------------ gRPC
    def _convert(self, collection: _Collection, name: str, value: Any) -> Any:
        prop = collection.prop(name)
        if prop is None:  # auto-schema, as the server does by default
            kind = "boolean" if isinstance(value, bool) else "text" if isinstance(value, str) else "number"
            collection.schema["properties"].append(_property_defaults({"name": name, "dataType": [kind]}))
            prop = collection.prop(name)
            assert prop is not None
        kind = prop["dataType"][0]
        if kind == "text" and isinstance(value, str):
            return value
        if kind == "boolean" and isinstance(value, bool):
            return value
        if kind == "int" and isinstance(value, float) and value.is_integer():
            return int(value)
        if kind == "number" and isinstance(value, float) and not isinstance(value, bool):
            return value
        raise EmulatorError(422, f"invalid {kind} property '{name}' on class '{collection.schema['class']}': {value!r}")

    def _batch_objects(self, request: Any) -> Any:
        from google.protobuf.json_format import MessageToDict
        from weaviate.proto.v1 import batch_pb2

        errors = []
        for index, obj in enumerate(request.objects):
            try:
                collection = self._collection(obj.collection)
                vector = (
                    np.frombuffer(obj.vector_bytes, dtype="<f4")
                    if obj.vector_bytes
                    else np.asarray(list(obj.vector), dtype=np.float32)
                )
                if vector.size == 0:
                    raise EmulatorError(422, "this emulator needs a vector on every object (vectorizer 'none')")
                if collection.dimensions is not None and vector.size != collection.dimensions:
                    raise EmulatorError(
                        422,
                        f"new node has a vector with length {vector.size}. "
                        f"Existing nodes have vectors with length {collection.dimensions}",
                    )
                raw = (
                    MessageToDict(obj.properties.non_ref_properties)
                    if obj.properties.HasField("non_ref_properties")
                    else {}
                )
                props = {k: self._convert(collection, k, v) for k, v in raw.items() if v is not None}
                object_id = str(uuid_lib.UUID(obj.uuid))
                collection.dimensions = int(vector.size)
                collection.objects[object_id] = (vector.astype(np.float32).copy(), props)
            except (EmulatorError, ValueError) as exc:
                errors.append(batch_pb2.BatchObjectsReply.BatchError(index=index, error=str(exc)))
        return batch_pb2.BatchObjectsReply(took=0.001, errors=errors)

    # -------------------------------------------------------- filters
    def _predicate(self, collection: _Collection, flt: Any) -> Any:
        from weaviate.proto.v1 import base_pb2

        ops = base_pb2.Filters.Operator
        if flt.operator in (ops.OPERATOR_AND, ops.OPERATOR_OR):
            parts = [self._predicate(collection, f) for f in flt.filters]
            if flt.operator == ops.OPERATOR_AND:
                return lambda oid, props: all(p(oid, props) for p in parts)
            return lambda oid, props: any(p(oid, props) for p in parts)
        name = flt.target.property if flt.HasField("target") else (flt.on[0] if flt.on else "")
        which = flt.WhichOneof("test_value")
        value: Any = getattr(flt, which) if which else None
        if which and which.endswith("_array"):
            value = list(value.values)
        if name == "_id":
            if which not in ("value_text", "value_text_array"):
                raise EmulatorError(422, "filters on _id take valueText")
            wanted = {str(uuid_lib.UUID(v)) for v in (value if isinstance(value, list) else [value])}
            if flt.operator == ops.OPERATOR_NOT_EQUAL:
                return lambda oid, props: oid not in wanted
            if flt.operator in (ops.OPERATOR_EQUAL, ops.OPERATOR_CONTAINS_ANY):
                return lambda oid, props: oid in wanted
            raise EmulatorError(422, f"operator {ops.Name(flt.operator)} is not supported on _id")
        prop = collection.prop(name)
        if prop is None:
            raise EmulatorError(422, f"no such prop with name '{name}' found in class '{collection.schema['class']}'")
        kind = prop["dataType"][0]
        if flt.operator == ops.OPERATOR_IS_NULL:
            if not collection.schema["invertedIndexConfig"]["indexNullState"]:
                raise EmulatorError(
                    422,
                    "Nullstate must be indexed to be filterable! add `indexNullState: true` to the invertedIndexConfig",
                )
            return lambda oid, props: (props.get(name) is None) == bool(value)
        expected = {"text": "value_text", "int": "value_int", "number": "value_number", "boolean": "value_boolean"}[
            kind
        ]
        if which not in (expected, expected + "_array"):
            raise EmulatorError(
                422, f"data type filter cannot use {which} on type {kind} (property '{name}'); use {expected}"
            )
        text_ops = (ops.OPERATOR_EQUAL, ops.OPERATOR_NOT_EQUAL, ops.OPERATOR_CONTAINS_ANY, ops.OPERATOR_LIKE)
        if kind == "text" and flt.operator not in text_ops:
            raise EmulatorError(422, f"operator {ops.Name(flt.operator)} on text is not supported by this emulator")
        if flt.operator == ops.OPERATOR_LIKE:
            if kind != "text":
                raise EmulatorError(422, f"Like is only supported on text properties, not {kind}")
            # '*' any run of characters, '?' one character; the whole value under field tokenization.
            pattern = re.compile(
                "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in str(value)), re.DOTALL
            )
            return lambda oid, props: props.get(name) is not None and pattern.fullmatch(str(props[name])) is not None
        values = value if isinstance(value, list) else [value]

        def equal(actual: Any, wanted: Any) -> bool:
            if kind == "text" and prop.get("tokenization") != "field":
                words = {w.lower() for w in _WORD.findall(str(actual))}
                return all(w.lower() in words for w in _WORD.findall(str(wanted)))
            return bool(actual == wanted)

        op = flt.operator

        def test(oid: str, props: dict[str, Any]) -> bool:
            actual = props.get(name)
            if op == ops.OPERATOR_NOT_EQUAL:
                return actual is None or not equal(actual, values[0])  # a missing property matches
            if actual is None:
                return False
            if op in (ops.OPERATOR_EQUAL, ops.OPERATOR_CONTAINS_ANY):
                return any(equal(actual, v) for v in values)
            bound = values[0]
            return bool(
                {
                    ops.OPERATOR_GREATER_THAN: actual > bound,
                    ops.OPERATOR_GREATER_THAN_EQUAL: actual >= bound,
                    ops.OPERATOR_LESS_THAN: actual < bound,
                    ops.OPERATOR_LESS_THAN_EQUAL: actual <= bound,
                }.get(op, False)
            )

        if op not in (
            ops.OPERATOR_EQUAL,
            ops.OPERATOR_NOT_EQUAL,
            ops.OPERATOR_CONTAINS_ANY,
            ops.OPERATOR_GREATER_THAN,
            ops.OPERATOR_GREATER_THAN_EQUAL,
            ops.OPERATOR_LESS_THAN,
            ops.OPERATOR_LESS_THAN_EQUAL,
        ):
            raise EmulatorError(422, f"operator {ops.Name(op)} is not supported by this emulator")
        return test

    def _matching(
        self, collection: _Collection, request: Any
    ) -> list[tuple[str, np.ndarray[Any, Any], dict[str, Any]]]:
        keep = self._predicate(collection, request.filters) if request.HasField("filters") else None
        return [
            (oid, vec, props)
            for oid, (vec, props) in sorted(collection.objects.items())
            if keep is None or keep(oid, props)
        ]

    # --------------------------------------------------------- search
    @staticmethod
    def _value(value: Any) -> Any:
        from weaviate.proto.v1 import properties_pb2

        if isinstance(value, bool):
            return properties_pb2.Value(bool_value=value)
        if isinstance(value, int):
            return properties_pb2.Value(int_value=value)
        if isinstance(value, float):
            return properties_pb2.Value(number_value=value)
        return properties_pb2.Value(text_value=str(value))

    def _search(self, request: Any) -> Any:
        from weaviate.proto.v1 import properties_pb2, search_get_pb2

        collection = self._collection(request.collection)
        limit = request.limit or 10
        if request.offset + limit > QUERY_MAXIMUM_RESULTS:
            raise EmulatorError(422, f"query maximum results exceeded: offset + limit > {QUERY_MAXIMUM_RESULTS}")
        rows = self._matching(collection, request)
        distances: dict[str, float] = {}
        if request.HasField("near_vector"):
            near = request.near_vector
            if near.vector_bytes:
                q = np.frombuffer(near.vector_bytes, dtype="<f4")
            elif near.vectors:
                q = np.frombuffer(near.vectors[0].vector_bytes, dtype="<f4")
            else:
                q = np.asarray(list(near.vector), dtype=np.float32)
            if collection.dimensions is not None and q.size != collection.dimensions:
                raise EmulatorError(
                    422, f"vector search: vector lengths don't match: {q.size} vs {collection.dimensions}"
                )
            qn = q.astype(np.float64) / (np.linalg.norm(q) or 1.0)
            for oid, vec, _ in rows:
                v = vec.astype(np.float64)
                distances[oid] = float(1.0 - (v @ qn) / (np.linalg.norm(v) or 1.0))
            rows.sort(key=lambda row: (distances[row[0]], row[0]))
        elif request.after:
            after = str(uuid_lib.UUID(request.after))
            rows = [row for row in rows if row[0] > after]
        rows = rows[request.offset : request.offset + limit]
        wanted = None if request.properties.return_all_nonref_properties else set(request.properties.non_ref_properties)
        if not request.HasField("properties"):
            wanted = None
        results = []
        for oid, vec, props in rows:
            fields = {k: self._value(v) for k, v in props.items() if wanted is None or k in wanted}
            meta = search_get_pb2.MetadataResult(id=oid, id_as_bytes=uuid_lib.UUID(oid).bytes)
            if oid in distances and request.metadata.distance:
                meta.distance = distances[oid]
                meta.distance_present = True
            if request.metadata.vector:
                meta.vector_bytes = vec.astype("<f4").tobytes()
            results.append(
                search_get_pb2.SearchResult(
                    properties=search_get_pb2.PropertiesResult(
                        non_ref_props=properties_pb2.Properties(fields=fields), target_collection=request.collection
                    ),
                    metadata=meta,
                )
            )
        return search_get_pb2.SearchReply(took=0.001, results=results)

    def _batch_delete(self, request: Any) -> Any:
        from weaviate.proto.v1 import batch_delete_pb2

        collection = self._collection(request.collection)
        if not request.HasField("filters"):
            raise EmulatorError(422, "batch delete needs filters")
        rows = self._matching(collection, request)
        if len(rows) > QUERY_MAXIMUM_RESULTS:
            rows = rows[:QUERY_MAXIMUM_RESULTS]
        if not request.dry_run:
            for oid, _, _ in rows:
                collection.objects.pop(oid, None)
        return batch_delete_pb2.BatchDeleteReply(took=0.001, failed=0, matches=len(rows), successful=len(rows))

    def _aggregate(self, request: Any) -> Any:
        from weaviate.proto.v1 import aggregate_pb2

        collection = self._collection(request.collection)
        if request.aggregations or request.HasField("group_by") or request.HasField("near_vector"):
            raise EmulatorError(422, "this emulator aggregates objects_count only")
        count = len(self._matching(collection, request))
        return aggregate_pb2.AggregateReply(
            took=0.001, single_result=aggregate_pb2.AggregateReply.Single(objects_count=count)
        )
