"""The vector stores IndexFoundry offers, each described once: ``STORES``, one entry per provider.

An entry says everything the rest of the code asks about a store without opening it: the
extra that installs its client, whether it stages a run's writes and switches to them on
publish, whether several processes may write it at once, where an embedded store lives in a
run, what its queries push down, and which module opens it. The config's ``vector_db.provider``
accepts exactly these names (``VectorProvider``), in this order. A new store is its module
under ``indexfoundry.backends.stores`` (with ``open_store(config, layout)``), one entry here and
its fixture in the store contract suite (``docs/design.md`` shows one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

# Whether a store's connection lets several processes write it at once (see ``StoreProvider``).
WriterRule = Callable[[Mapping[str, Any]], bool]


def always(connection: Mapping[str, Any]) -> bool:
    """A server store: every connection reaches a server that takes concurrent writers."""
    return True


def never(connection: Mapping[str, Any]) -> bool:
    """Written by one process only, whatever the connection."""
    return False


def when_set(*keys: str) -> WriterRule:
    """A server (concurrent writers) when one of ``keys`` is set, else embedded (one writer)."""

    def rule(connection: Mapping[str, Any]) -> bool:
        return any(bool(connection.get(key)) for key in keys)

    return rule


def when_url(key: str) -> WriterRule:
    """A server when ``connection[key]`` is a URL (``scheme://``), else an embedded file."""

    def rule(connection: Mapping[str, Any]) -> bool:
        return "://" in str(connection.get(key, ""))

    return rule


@dataclass(frozen=True)
class StoreProvider:
    """One vector store, described once.

    - ``name``: the ``vector_db.provider`` value.
    - ``module``: the module of ``indexfoundry.backends.stores`` that opens it, with
      ``open_store(config, layout)`` (default: ``name``); imported only when a store is opened.
    - ``extra`` / ``client``: the pip extra installing its client, and the module that must then
      import (None: a core dependency).
    - ``publishes``: it stages a run's writes and switches the collection to them when the run
      becomes ``latest`` (the store's ``prepare_publish`` / ``publish``); the others serve at once.
    - ``concurrent_writers``: whether several processes may upsert at once with this connection
      (a cluster's workers write server stores; embedded ones are written by the driver).
    - ``run_path``: the ``RunLayout`` property of its place inside the run when embedded, and
      ``location_key``, the connection key that names another place instead.
    - ``copies_base``: a ``--base`` run (or a plain rerun, of the 'latest' it replaces) may start
      from a copy of that run's embedded store.
    - ``contains``: its query translates ``$contains`` (the others have it checked after the query).
    - ``keyword_option``: the connection key that moves keyword search into the store.
    - ``releases_runs``: ``run cleanup`` frees what a removed run holds in it (its
      ``release_run(config, layout)``).
    - ``preload``: modules its client takes long to import, imported on a background thread
      while the phases before index wait on their workers (``Phase.prepare_ahead``).
    """

    name: str
    module: str = ""
    extra: str | None = None
    client: str | None = None
    publishes: bool = False
    concurrent_writers: WriterRule = never
    run_path: str | None = None
    location_key: str = "path"
    copies_base: bool = False
    contains: bool = False
    keyword_option: str | None = None
    releases_runs: bool = False
    preload: tuple[str, ...] = ()

    @property
    def module_name(self) -> str:
        """The importable module that opens this store."""
        return f"indexfoundry.backends.stores.{self.module or self.name}"


# In the order the config schema lists them.
STORES: dict[str, StoreProvider] = {
    entry.name: entry
    for entry in (
        StoreProvider(
            "milvus",
            extra="milvus",
            client="pymilvus",
            concurrent_writers=when_url("uri"),
            run_path="milvus_file",
            location_key="uri",
        ),
        StoreProvider("pinecone", extra="pinecone", client="pinecone", concurrent_writers=always),
        # One writer: Weaviate declares a property before the first object using it (two could race).
        StoreProvider("weaviate", extra="weaviate", client="weaviate"),
        StoreProvider(
            "qdrant",
            extra="qdrant",
            client="qdrant_client",
            concurrent_writers=when_set("url", "host"),
            run_path="qdrant_dir",
        ),
        # chromadb's import (its telemetry exporters, ``overrides``' signature checks) takes ~0.7 s.
        StoreProvider(
            "chroma",
            concurrent_writers=when_set("host"),
            run_path="chroma_dir",
            copies_base=True,
            preload=("chromadb",),
        ),
        StoreProvider("local", run_path="local_store_dir", copies_base=True, contains=True),
        StoreProvider(
            "pgvector",
            extra="pgvector",
            client="psycopg",
            publishes=True,
            concurrent_writers=always,
            contains=True,
            keyword_option="full_text_search",
            releases_runs=True,
        ),
    )
}

if TYPE_CHECKING:
    VectorProvider = str
else:
    VectorProvider = Literal[tuple(STORES)]


def store_provider(name: str) -> StoreProvider | None:
    """The entry of ``name``, or None for a name no store answers to."""
    return STORES.get(name)
