"""Vector stores behind one interface.

``chroma`` (embedded, default; or client/server with ``host``/``port``), ``local`` (a flat
on-disk store in the run, searched with numpy), ``qdrant`` (extra ``qdrant``: local mode in a
folder, or a server URL) and ``milvus`` (extra ``milvus``: Milvus Lite file, or a server URI).

Every store keeps the same things: the chunk id, the vector (cosine similarity), optionally
the chunk text, and flat metadata keyed by dotted chunk field names (``source.uri``). A
collection records the embedding model and dimensions it holds; writing vectors of another
model is refused with ``DB_ERROR``. ``where`` filters use Chroma's syntax
(``{field: {"$eq": v}}``, ``$ne $gt $gte $lt $lte $in $nin``, ``{"$and": [...]}``,
``{"$or": [...]}``); each store translates them, and a comparison on a field a vector does
not have never matches it. Stores whose registry entry says ``contains`` also take ``$contains``
(substring of a string field; a present value of another type passes, for the caller to
check), which the retrieval service then pushes down to them.

``pinecone`` and ``weaviate`` (extras of the same names) are cloud/server stores through their
official clients.

``pgvector`` (extra ``pgvector``) is a PostgreSQL server: each run writes its own table,
``prepare_publish`` builds its indexes once the run's vectors verify, and ``publish`` switches
the collection's view to it when the run becomes ``latest`` (the runner's commit point, after
the run guards and the serve phase; see ``pgvector.py``). Stores without a ``publish`` method
(their registry entry says ``publishes``) serve what they hold at once.

Each store is described once, by its entry in ``models/stores.py`` (``STORES``): the functions
below read it (``provider_of``) instead of asking which provider a config names, and
``open_store`` calls the ``open_store(config, layout)`` of the module the entry names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.errors import ConfigInvalid, DbError, IndexFoundryError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.models.stores import STORES, StoreProvider, store_provider
from indexfoundry.storage.layout import RunLayout

Metadata = dict[str, str | int | float | bool]

# Internal operator: the field is missing (the vectors of no namespace); never parsed from a filter.
ABSENT = "$absent"

# Metadata keys the stores reserve for themselves.
NAMESPACE_KEY = "namespace"
TEXT_HASH_KEY = "_text_hash"


@dataclass(frozen=True)
class StoreHit:
    """One nearest neighbour: id, cosine similarity score, stored text and metadata."""

    id: str
    score: float
    text: str | None
    metadata: Metadata


class VectorStore(Protocol):
    """What the index phase and the retrieval service need from a vector database.

    ``ensure_collection`` must be called before writing; reads open the existing collection.
    Everything a store does is scoped to the configured namespace.
    """

    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None: ...
    def existing(self, ids: list[str]) -> dict[str, Metadata]: ...
    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None: ...
    def all_ids(self) -> list[str]: ...
    def delete(self, ids: list[str]) -> None: ...
    def count(self) -> int: ...
    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]: ...
    def max_batch_size(self) -> int: ...
    def close(self) -> None: ...


# ---------------------------------------------------------------- filters
@dataclass(frozen=True)
class Compare:
    """``field op value`` with a Chroma operator (``$eq`` ...)."""

    field: str
    op: str
    value: Any


@dataclass(frozen=True)
class Logic:
    """``$and`` / ``$or`` of sub-filters."""

    op: str
    parts: tuple[Compare | Logic, ...]


Filter = Compare | Logic
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains")


def pushes_contains(config: VectorDbConfig) -> bool:
    """Whether the store's query translates ``$contains`` (the others get it checked after the query)."""
    return provider_of(config).contains


def parse_where(where: dict[str, Any] | None) -> Filter | None:
    """Chroma-style ``where`` dict → a small filter tree every store translates."""
    if not where:
        return None
    parts: list[Filter] = []
    for key, value in where.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise ConfigInvalid(f"'{key}' needs a non-empty list of filters", suggestion="Fix the filter")
            subs = [p for p in (parse_where(v) for v in value) if p is not None]
            parts.append(Logic(key, tuple(subs)))
        elif key.startswith("$"):
            raise ConfigInvalid(f"unknown filter operator '{key}'", suggestion="Use $and or $or at the top level")
        elif isinstance(value, dict):
            if len(value) != 1:
                raise ConfigInvalid(f"filter on '{key}' needs exactly one operator", suggestion="Use $and")
            ((op, operand),) = value.items()
            if op not in OPERATORS:
                raise ConfigInvalid(f"unknown filter operator '{op}'", suggestion=f"Use one of {', '.join(OPERATORS)}")
            if op in ("$in", "$nin") and not isinstance(operand, list):
                raise ConfigInvalid(f"'{op}' on '{key}' needs a list", suggestion="Pass a list value")
            parts.append(Compare(key, op, operand))
        else:
            parts.append(Compare(key, "$eq", value))
    return parts[0] if len(parts) == 1 else Logic("$and", tuple(parts))


def and_filters(*filters: Filter | None) -> Filter | None:
    present = tuple(f for f in filters if f is not None)
    if not present:
        return None
    return present[0] if len(present) == 1 else Logic("$and", present)


def _compare(actual: Any, op: str, value: Any) -> bool:
    if actual is None:
        return False
    try:
        if op == "$eq":
            return bool(actual == value)
        if op == "$ne":
            return bool(actual != value)
        if op == "$in":
            return actual in value
        if op == "$nin":
            return actual not in value
        if op == "$contains":
            # A substring of a string; a value of another type is left to the caller's own check.
            return not isinstance(actual, str) or str(value) in actual
        if isinstance(actual, bool) or isinstance(value, bool) or isinstance(actual, str) != isinstance(value, str):
            return False
        if op == "$gt":
            return bool(actual > value)
        if op == "$gte":
            return bool(actual >= value)
        if op == "$lt":
            return bool(actual < value)
        if op == "$lte":
            return bool(actual <= value)
    except TypeError:
        return False
    return False


def matches(flt: Filter | None, metadata: dict[str, Any]) -> bool:
    """Evaluate a filter against one vector's metadata (the local store, and tests)."""
    if flt is None:
        return True
    if isinstance(flt, Compare):
        if flt.op == ABSENT:
            return flt.field not in metadata
        return _compare(metadata.get(flt.field), flt.op, flt.value)
    results = (matches(part, metadata) for part in flt.parts)
    return all(results) if flt.op == "$and" else any(results)


# ---------------------------------------------------------------- shared checks
def store_error(store: str, action: str, exc: BaseException, **kwargs: Any) -> DbError:
    """The DB_ERROR of a failed store call, worded alike for every store: ``<store> <action>
    failed: <exception type>: <its message, on one line, at most 300 characters>``. Each store
    decides ``recoverable`` (worth a rerun), the suggestion and details."""
    message = " ".join(str(exc).split())
    return DbError(f"{store} {action} failed: {type(exc).__name__}: {message[:300]}", **kwargs)


# A store's wording of a failed client call: (action, exception) -> its DB_ERROR (store_error
# with the store's own recoverable rule and suggestion).
ErrorWording = Callable[[str, BaseException], DbError]


class translating:
    """The one translation of a store's client errors: ``with translating(_db_error, "upsert"):``
    around client calls turns any exception they raise into the store's DB_ERROR for that
    action (``wording(action, exc)``, raised ``from None``: the client's traceback is not the
    user's). IndexFoundry's own errors pass through untouched (a ``DbError`` raised inside, a
    ``ConfigInvalid`` for an unset key variable), and so do ``BaseException``s that are not
    ``Exception``s (KeyboardInterrupt, SystemExit)."""

    __slots__ = ("action", "wording")

    def __init__(self, wording: ErrorWording, action: str) -> None:
        self.wording = wording
        self.action = action

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        # Returns None (never suppresses): type checkers then know a ``return`` inside is final.
        if isinstance(exc, Exception) and not isinstance(exc, IndexFoundryError):
            raise self.wording(self.action, exc) from None


def model_mismatch(collection: str, held_model: Any, held_dims: Any, model_id: str, dimensions: int) -> DbError | None:
    """DB_ERROR when a collection records another embedding model or dimension count."""
    if held_model in (None, "", model_id) and held_dims in (None, "", dimensions, str(dimensions)):
        return None
    return DbError(
        f"collection '{collection}' holds vectors of {held_model} ({held_dims} dims); "
        f"refusing to add {model_id} ({dimensions} dims)",
        suggestion=(
            "Use another collection name, the same embedding model as before, or "
            "vector_db.upsert_mode: replace to rebuild the collection with the new model"
        ),
        details={"collection": collection, "held_model": held_model, "model": model_id},
    )


def with_namespace(metadatas: list[Metadata], namespace: str | None) -> list[Metadata]:
    if not namespace:
        return metadatas
    return [{**m, NAMESPACE_KEY: namespace} for m in metadatas]


def namespace_filter(namespace: str | None) -> Filter:
    """The vectors of ``namespace``; without one, the vectors of no namespace (never another's)."""
    return Compare(NAMESPACE_KEY, "$eq", namespace) if namespace else Compare(NAMESPACE_KEY, ABSENT, None)


def in_namespace(metadata: dict[str, Any], namespace: str | None) -> bool:
    return metadata.get(NAMESPACE_KEY) == namespace if namespace else NAMESPACE_KEY not in metadata


def checked_query(
    run: Callable[[int], list[StoreHit]], top_k: int, flt: Filter | None, namespace: str | None, limit: int
) -> list[StoreHit]:
    """Hits of a store whose own query is looser than the shared rule (Chroma and Milvus match a
    missing field under ``$ne``/``$nin``, and cannot tell "no namespace" apart): each hit is
    checked with ``matches`` and the namespace, and more are fetched until ``top_k`` pass or the
    store has no more. ``run(n)`` is the store's query for ``n`` hits."""
    n = top_k
    while True:
        raw = run(n)
        kept = [h for h in raw if in_namespace(h.metadata, namespace) and matches(flt, h.metadata)]
        if len(kept) >= top_k or len(raw) < n or n >= limit:
            return kept[:top_k]
        n = min(limit, n * 4)


def secret_env(conn: dict[str, Any], key: str, provider: str) -> str | None:
    """The secret held by the environment variable ``conn[key]`` names (never the value itself)."""
    import os

    name = conn.get(key)
    if not name:
        return None
    value = os.environ.get(str(name))
    if not value:
        raise ConfigInvalid(
            f"{provider}: the environment variable {name} (vector_db.connection.{key}) is not set",
            suggestion=f"export {name}=...",
        )
    return value


# ---------------------------------------------------------------- remote clients
def retrying(
    call: Callable[..., Any], transient: Callable[[BaseException], bool], conn: dict[str, Any]
) -> Callable[..., Any]:
    """``call`` retried on transient network errors: ``connection.max_retries`` times (default 3),
    backoff from ``connection.backoff_ms`` (default 500) doubling up to 30 s. Every store call
    retried this way is idempotent (upserts and deletes by id, reads)."""
    import tenacity

    retries = int(conn.get("max_retries", 3))
    first = int(conn.get("backoff_ms", 500)) / 1000

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        for attempt in tenacity.Retrying(
            stop=tenacity.stop_after_attempt(retries + 1),
            wait=tenacity.wait_exponential(multiplier=first, min=first, max=30),
            retry=tenacity.retry_if_exception(transient),
            reraise=True,
        ):
            with attempt:
                return call(*args, **kwargs)
        raise AssertionError("unreachable")  # pragma: no cover - tenacity reraises

    return wrapped


class RetryingClient:
    """A server client whose every method call goes through ``retrying`` (remote Qdrant, Milvus)."""

    def __init__(self, client: Any, transient: Callable[[BaseException], bool], conn: dict[str, Any]) -> None:
        self._client = client
        self._transient = transient
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name == "close":
            return attr
        return retrying(attr, self._transient, self._conn)


# ---------------------------------------------------------------- opening
def provider_of(config: VectorDbConfig) -> StoreProvider:
    """The registry entry of the configured store (``models/stores.py``)."""
    entry = store_provider(config.provider)
    if entry is None:
        raise ConfigInvalid(
            f"vector store '{config.provider}' is not supported",
            suggestion=f"Use vector_db.provider: {_choices()}",
        )
    return entry


def _choices() -> str:
    names = list(STORES)
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def open_store(config: VectorDbConfig, layout: RunLayout) -> VectorStore:
    """Open the configured store (its module's ``open_store``). Embedded stores live in the run
    unless a path/uri is configured."""
    module = importlib.import_module(provider_of(config).module_name)
    store: VectorStore = module.open_store(config, layout)
    return store


def keyword_in_store(config: VectorDbConfig) -> bool:
    """Whether the keyword leg of search runs in the store (pgvector's ``full_text_search``
    option: PostgreSQL full-text search) instead of the run's BM25 index (the default)."""
    option = provider_of(config).keyword_option
    return option is not None and bool(config.connection.get(option))


def prepare_publish(store: VectorStore) -> None:
    """Get a verified run's vectors ready to serve (pgvector builds the table's indexes) without
    switching the collection to them yet."""
    method = getattr(store, "prepare_publish", None)
    if method is not None:
        method()


def run_store_path(config: VectorDbConfig, layout: RunLayout) -> Path | None:
    """Where an embedded store a new run can start from a copy of lives inside the run; None for a
    server or a configured path (one store shared by every run, so there is nothing to copy)."""
    entry = provider_of(config)
    conn = config.connection
    if not entry.copies_base or entry.run_path is None or any(k in conn for k in ("host", "url", "path", "uri")):
        return None
    path: Path = getattr(layout, entry.run_path)
    return path


def seed_from_base(config: VectorDbConfig, layout: RunLayout, base: RunLayout) -> bool:
    """Start a run's embedded store as a copy of another run's (its base, or the 'latest' a
    plain rerun replaces), so its upsert writes only the changes (and prunes what is gone)
    instead of every vector. The caller checks that ``base`` was indexed with the same store
    settings and model; the upsert still compares every row and verifies the store against the
    run. False when there is nothing to copy or the copy failed (the run then writes every vector)."""
    import shutil

    source, target = run_store_path(config, base), run_store_path(config, layout)
    if source is None or target is None or not source.is_dir() or target.exists():
        return False
    staging = target.with_name(f".{target.name}.seeding")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        shutil.copytree(source, staging)
    except OSError:  # e.g. the other run was removed meanwhile (shutil.Error is an OSError)
        shutil.rmtree(staging, ignore_errors=True)
        return False
    staging.replace(target)
    return True


def takes_concurrent_writers(config: VectorDbConfig) -> bool:
    """True for the server stores, which several processes may upsert into at once (Chroma in
    client/server mode, pgvector, remote Qdrant and Milvus, Pinecone). Embedded stores (Chroma's
    folder, the local store, Qdrant's local mode, Milvus Lite) are written by one process only:
    on a cluster, the driver. So is Weaviate for now (its registry entry says why)."""
    return provider_of(config).concurrent_writers(config.connection)


def publish(store: VectorStore) -> None:
    """Make a verified run's vectors the collection's served index (stores that stage writes)."""
    method = getattr(store, "publish", None)
    if method is not None:
        method()


def release_run(config: VectorDbConfig, layout: RunLayout) -> bool:
    """Free what a removed run holds in a server store (``run cleanup``): its pgvector table,
    unless that table is the published index. True if something was dropped."""
    entry = provider_of(config)
    if not entry.releases_runs:
        return False
    released: bool = importlib.import_module(entry.module_name).release_run(config, layout)
    return released


def _public(conn: dict[str, Any]) -> dict[str, Any]:
    """Connection settings without secrets (names of environment variables are kept)."""
    out = {}
    for key, value in conn.items():
        lowered = key.lower()
        if ("key" in lowered or "token" in lowered or "password" in lowered) and not lowered.endswith("_env"):
            continue
        out[key] = value
    return out


def describe_location(config: VectorDbConfig, layout: RunLayout) -> dict[str, Any]:
    """Where the vectors are, for ``vector_manifest.json`` (no secrets, run-relative paths)."""
    conn = _public(config.connection)
    entry = provider_of(config)
    remote = any(k in conn for k in ("host", "url")) or "://" in str(conn.get("uri", ""))
    if entry.run_path is not None and not remote:
        key = entry.location_key
        path = Path(conn.get(key, getattr(layout, entry.run_path)))
        try:
            conn[key] = path.resolve().relative_to(layout.root.resolve()).as_posix()
        except ValueError:
            conn[key] = str(path)
    return {"provider": config.provider, "connection": conn}
