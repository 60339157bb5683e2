"""The store contract: one suite run against every vector store.

Stores: Chroma embedded and a Chroma server, the local numpy store, Qdrant local mode, Milvus
Lite, PostgreSQL + pgvector (a real server) — and the emulated Pinecone and Weaviate wire
protocols where their clients are installed. Every store must: write and read back ids,
metadata and text; keep namespaces apart; select exactly what the shared filter rule
(``stores.matches``) selects, for every operator; give the exact top-10 for the same vectors;
follow the upsert modes (write only changes, prune once, verify; insert; replace; refuse
another model); and, for servers, fail with a recoverable ``DB_ERROR`` when the server goes
away mid-upsert, after which a rerun of the same run completes with no duplicate.
"""

from __future__ import annotations

import gc
import itertools
import re
import types
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexfoundry.backends.stores import (
    Metadata,
    VectorStore,
    matches,
    open_store,
    parse_where,
    publish,
    pushes_contains,
)
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.models.records import DocumentChunk
from indexfoundry.phases.index import Embedded, upsert_chunks, verify_ids
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import RunLayout
from tests.hostile.test_vector_store_failure import ChromaServer, _free_port
from tests.integration.store_servers import PgServer

DIMS = 16
N = 48


@dataclass
class Kit:
    """How to open one kind of store, and (for servers) how to make it go away and come back."""

    name: str
    provider: str
    connection: dict[str, Any]
    root: Path
    stop: Callable[[], None] | None = None
    start: Callable[[], None] | None = None
    _collections: Iterator[int] = field(default_factory=itertools.count)

    def config(self, collection: str, namespace: str | None = None, **extra: Any) -> VectorDbConfig:
        return VectorDbConfig(
            provider=self.provider,  # type: ignore[arg-type]
            collection=collection,
            namespace=namespace,
            connection=dict(self.connection),
            **extra,
        )

    def collection(self) -> str:
        return f"contract_{uuid.uuid4().hex[:8]}_{next(self._collections)}"

    def open(self, config: VectorDbConfig, run: str = "run-1") -> VectorStore:
        return open_store(config, RunLayout(self.root / run))


# ---------------------------------------------------------------- the stores
@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    from indexfoundry.backends.stores import chroma

    server = ChromaServer(tmp_path_factory.mktemp("chroma-server"), _free_port())
    server.start()
    try:
        yield server
    finally:
        chroma.close_http_clients()
        server.kill()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


def _restart_chroma(server: ChromaServer) -> None:
    from indexfoundry.backends.stores import chroma

    chroma.close_http_clients()
    server.start()


# One kit per way of running a store: a new store adds its kit here (and nothing else in this suite).
KitFactory = Callable[[pytest.FixtureRequest, Path, Path], Iterator[Kit]]
KITS: dict[str, KitFactory] = {}
KIT_PROVIDERS: dict[str, str] = {}
SERVER_KITS: list[str] = []


def kit_for(name: str, provider: str, server: bool = False) -> Callable[[KitFactory], KitFactory]:
    """Register the kit ``name`` of ``provider``; ``server``: a server the suite stops and
    restarts mid-upsert."""

    def register(factory: KitFactory) -> KitFactory:
        KITS[name] = factory
        KIT_PROVIDERS[name] = provider
        if server:
            SERVER_KITS.append(name)
        return factory

    return register


@kit_for("chroma", "chroma")
def _chroma(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    yield Kit("chroma", "chroma", {"path": str(tmp_path / "store")}, root)


@kit_for("chroma-server", "chroma", server=True)
def _chroma_server(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    server: ChromaServer = request.getfixturevalue("chroma_server")
    yield Kit(
        "chroma-server",
        "chroma",
        {"host": "127.0.0.1", "port": server.port},
        root,
        stop=server.kill,
        start=lambda: _restart_chroma(server),
    )


@kit_for("local", "local")
def _local(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    yield Kit("local", "local", {"path": str(tmp_path / "store")}, root)


@kit_for("qdrant", "qdrant")
def _qdrant(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    yield Kit("qdrant", "qdrant", {"path": str(tmp_path / "store")}, root)


@kit_for("milvus", "milvus")
def _milvus(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    yield Kit("milvus", "milvus", {"uri": str(tmp_path / "store.db")}, root)


@kit_for("pgvector", "pgvector", server=True)
def _pgvector(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    pg: PgServer = request.getfixturevalue("pg_server")
    dsn: str = request.getfixturevalue("pg_dsn")
    yield Kit("pgvector", "pgvector", {"dsn": dsn}, root, stop=pg.stop, start=pg.start)


@kit_for("pinecone-emulator", "pinecone", server=True)
def _pinecone(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    pytest.importorskip("pinecone", reason="the pinecone client is not installed (extra 'pinecone')")
    from tests.emulators.pinecone import PineconeEmulator

    emulator = PineconeEmulator(DIMS, api_key="contract-key")
    emulator.start()
    request.getfixturevalue("monkeypatch").setenv("CONTRACT_PINECONE_KEY", "contract-key")
    connection = {"host": emulator.host, "api_key_env": "CONTRACT_PINECONE_KEY", "max_retries": 1}
    try:
        yield Kit("pinecone-emulator", "pinecone", connection, root, stop=emulator.stop, start=emulator.start)
    finally:
        emulator.stop()


@kit_for("weaviate-emulator", "weaviate", server=True)
def _weaviate(request: pytest.FixtureRequest, tmp_path: Path, root: Path) -> Iterator[Kit]:
    weaviate = request.getfixturevalue("weaviate_emulator")
    patch = request.getfixturevalue("monkeypatch")
    patch.setenv("CONTRACT_WEAVIATE_KEY", weaviate.api_key)
    # The client retries an unreachable gRPC server after 1+2+4+8 s: the same retries, no waits.
    patch.setattr("weaviate.retry.time", types.SimpleNamespace(sleep=lambda seconds: None))
    connection = {"url": weaviate.url, "grpc_url": weaviate.grpc_url, "api_key_env": "CONTRACT_WEAVIATE_KEY"}
    yield Kit("weaviate-emulator", "weaviate", connection, root, stop=weaviate.stop, start=weaviate.start)


STORES = list(KITS)
SERVERS = list(SERVER_KITS)


@pytest.fixture
def kit(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kit]:
    root = tmp_path / "runs"
    root.mkdir()
    yield from KITS[request.param](request, tmp_path, root)
    from indexfoundry.backends.stores.milvus import close_lite_clients
    from indexfoundry.backends.stores.qdrant import close_local_clients

    close_local_clients()
    close_lite_clients()


def test_every_registered_store_has_a_kit_in_this_suite():
    from indexfoundry.models.stores import STORES as REGISTERED

    assert set(REGISTERED) == set(KIT_PROVIDERS.values())


def stores(names: list[str]) -> Any:
    return pytest.mark.parametrize("kit", names, indirect=True)


# ---------------------------------------------------------------- data
def _metadata(i: int) -> Metadata:
    meta: Metadata = {
        "source.uri": f"docs/d{i % 6}.md",
        "source.type": "pdf" if i % 3 == 0 else "markdown",
        "chunk_index": i % 8,
        "metadata.title": ["alpha guide", "beta notes", "gamma alpha"][i % 3],
    }
    if i % 2 == 0:
        meta["position.page"] = i % 5  # present on half the vectors only
    return meta


def _vectors(n: int, seed: int) -> np.ndarray[Any, Any]:
    matrix = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


IDS = [f"chunk-{i:03d}" for i in range(N)]
VECTORS = _vectors(N, 1)
METAS = [_metadata(i) for i in range(N)]
TEXTS = [f"text of chunk {i}" for i in range(N)]


def _filled(kit: Kit, config: VectorDbConfig, run: str = "run-1") -> VectorStore:
    store = kit.open(config, run)
    store.ensure_collection("test-model", DIMS)
    store.upsert(IDS, VECTORS, TEXTS, METAS)
    return store


# ---------------------------------------------------------------- the contract
@stores(STORES)
def test_a_store_returns_what_was_written(kit: Kit):
    store = _filled(kit, kit.config(kit.collection()))
    try:
        assert store.all_ids() == IDS
        assert store.count() == N
        got = store.existing([*IDS[:5], "not-there"])
        assert sorted(got) == IDS[:5]
        assert all(got[i]["source.uri"] == METAS[int(i[-3:])]["source.uri"] for i in got)
        hit = store.query(VECTORS[7], 1)[0]
        assert hit.id == IDS[7] and hit.score == pytest.approx(1.0, abs=1e-4)
        assert hit.text == TEXTS[7] and hit.metadata["chunk_index"] == METAS[7]["chunk_index"]
        store.delete(IDS[:4])
        assert store.all_ids() == IDS[4:]
    finally:
        store.close()


@stores(STORES)
def test_namespaces_of_one_collection_never_see_each_other(kit: Kit):
    collection = kit.collection()
    opened = {ns: kit.open(kit.config(collection, ns)) for ns in ("team-a", "team-b", None)}
    try:
        for n, (ns, store) in enumerate(opened.items()):
            store.ensure_collection("test-model", DIMS)
            ids = IDS[: 10 + n]
            metas = [{**m, "metadata.title": f"owned by {ns}"} for m in METAS[: 10 + n]]
            store.upsert(ids, VECTORS[: 10 + n], TEXTS[: 10 + n], metas)
        for n, (ns, store) in enumerate(opened.items()):
            assert store.all_ids() == IDS[: 10 + n]
            assert store.count() == 10 + n
            hits = store.query(VECTORS[3], 20)
            assert {h.metadata["metadata.title"] for h in hits} == {f"owned by {ns}"}
            assert sorted(h.id for h in hits) == IDS[: 10 + n]
        opened["team-a"].delete(IDS[:5])
        assert opened["team-a"].all_ids() == IDS[5:10]
        assert opened["team-b"].all_ids() == IDS[:11]
        assert opened[None].all_ids() == IDS[:12]
    finally:
        for store in opened.values():
            store.close()


FILTERS: list[dict[str, Any]] = [
    {"source.uri": {"$eq": "docs/d1.md"}},
    {"source.uri": "docs/d2.md"},
    {"source.uri": {"$ne": "docs/d1.md"}},
    {"chunk_index": {"$eq": 3}},
    {"chunk_index": {"$gt": 4}},
    {"chunk_index": {"$gte": 4}},
    {"chunk_index": {"$lt": 2}},
    {"chunk_index": {"$lte": 2}},
    {"position.page": {"$gte": 2}},
    {"position.page": {"$ne": 3}},  # a vector without the field never matches
    {"position.page": {"$nin": [0, 1]}},
    {"source.uri": {"$in": ["docs/d0.md", "docs/d5.md"]}},
    {"source.uri": {"$nin": ["docs/d0.md", "docs/d5.md"]}},
    {"chunk_index": {"$in": [1, 6]}},
    {"$and": [{"source.type": {"$eq": "markdown"}}, {"chunk_index": {"$lt": 5}}]},
    {"$or": [{"source.type": {"$eq": "pdf"}}, {"position.page": {"$eq": 4}}]},
    {"$or": [{"chunk_index": {"$eq": 0}}, {"$and": [{"source.uri": "docs/d3.md"}, {"chunk_index": {"$gte": 3}}]}]},
]
CONTAINS_FILTERS: list[dict[str, Any]] = [
    {"metadata.title": {"$contains": "alpha"}},
    {"$and": [{"metadata.title": {"$contains": "not"}}, {"chunk_index": {"$gt": 1}}]},
]


@stores(STORES)
def test_every_filter_operator_selects_exactly_what_the_shared_rule_selects(kit: Kit):
    config = kit.config(kit.collection())
    store = _filled(kit, config)
    filters = FILTERS + (CONTAINS_FILTERS if pushes_contains(config) else [])
    try:
        for where in filters:
            expected = sorted(i for i, m in zip(IDS, METAS, strict=True) if matches(parse_where(where), m))
            assert expected, where
            assert sorted(h.id for h in store.query(VECTORS[0], N, where)) == expected, where
    finally:
        store.close()


@stores(STORES)
def test_the_top10_for_the_same_vectors_is_the_exact_cosine_top10(kit: Kit):
    store = _filled(kit, kit.config(kit.collection()))
    try:
        for query in _vectors(8, 2):
            scores = VECTORS @ query
            expected = [IDS[i] for i in np.argsort(-scores)[:10]]
            hits = store.query(query, 10)
            assert [h.id for h in hits] == expected
            assert [h.score for h in hits] == pytest.approx(sorted(scores, reverse=True)[:10], abs=1e-4)
    finally:
        store.close()


# ---------------------------------------------------------------- upsert modes (the index phase's code)
def _chunk(i: int, version: str = "") -> DocumentChunk:
    doc = f"doc-{i % 6}"
    text = f"text of chunk {i}{version}"
    return DocumentChunk.model_validate(
        {
            "doc_id": doc,
            "chunk_id": IDS[i] if i < N else f"chunk-{i:03d}",
            "chunk_index": i % 8,
            "source": {"type": "markdown", "uri": f"docs/d{i % 6}.md", "content_hash": sha256_text(doc)},
            "content": {"text": text, "text_hash": sha256_text(text), "char_count": len(text), "token_count_approx": 4},
            "position": {"byte_start": i * 10, "byte_end": i * 10 + 9},
            "metadata": {"content_type": "text/markdown", "title": f"Doc {i % 6}"},
        }
    )


def _embedded(chunks: list[DocumentChunk], model: str = "test-model", seed: int = 0) -> Embedded:
    hashes = {c.chunk_id: sha256_text(c.embedding_text()) for c in chunks}
    vectors = {}
    for c in chunks:
        # The vector depends on the text only, as a real embedder's would.
        rng = np.random.default_rng(int(hashes[c.chunk_id][:8], 16) + seed)
        vector = rng.standard_normal(DIMS).astype(np.float32)
        vectors[hashes[c.chunk_id]] = vector / np.linalg.norm(vector)
    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    return Embedded(ordered, hashes, vectors, model, DIMS, 0, len(chunks))


def _upsert(kit: Kit, config: VectorDbConfig, embedded: Embedded, run: str) -> dict[str, Any]:
    """The index phase's upsert, then the run's commit point (a completed run becomes 'latest')."""
    store = kit.open(config, run)
    try:
        result = upsert_chunks(store, embedded, config)
        publish(store)
        return result
    finally:
        store.close()


def _ids(kit: Kit, config: VectorDbConfig, run: str) -> list[str]:
    store = kit.open(config, run)
    try:
        return store.all_ids()
    finally:
        store.close()


@stores(STORES)
def test_upsert_modes_write_only_changes_prune_once_and_verify(kit: Kit):
    collection = kit.collection()
    upsert = kit.config(collection, batch_size=7)
    first = _upsert(kit, upsert, _embedded([_chunk(i) for i in range(30)]), "run-1")
    assert first["stats"]["vectors_inserted"] == 30 and first["verified"]

    # Run 2: 10 chunks gone, 5 changed, 10 new, 15 unchanged.
    second_chunks = [_chunk(i, " (edited)" if i < 15 else "") for i in range(10, 40)]
    second = _upsert(kit, upsert, _embedded(second_chunks), "run-2")["stats"]
    assert (second["vectors_sent"], second["vectors_updated"], second["vectors_inserted"]) == (15, 5, 10)
    assert (second["vectors_unchanged"], second["vectors_pruned"]) == (15, 10)
    assert _ids(kit, upsert, "run-2") == IDS[10:40]

    # Insert: only adds what is missing, prunes nothing.
    insert = kit.config(collection, upsert_mode="insert")
    third = _upsert(kit, insert, _embedded([_chunk(i) for i in range(38, 44)]), "run-3")["stats"]
    assert (third["vectors_sent"], third["vectors_pruned"]) == (4, 0)
    assert _ids(kit, insert, "run-3") == IDS[10:44]

    # Another model is refused; replace rebuilds the collection with it.
    other = _embedded([_chunk(i) for i in range(5)], model="other-model", seed=9)
    with pytest.raises(IndexFoundryError) as refused:
        _upsert(kit, upsert, other, "run-4")
    assert refused.value.code == "DB_ERROR"
    replace = kit.config(collection, upsert_mode="replace")
    fifth = _upsert(kit, replace, other, "run-5")["stats"]
    assert fifth["vectors_sent"] == 5
    store = kit.open(replace, "run-5")
    try:
        assert verify_ids(store, set(IDS[:5])) == ([], [])
        assert store.count() == 5
    finally:
        store.close()


@stores(SERVERS)
def test_a_server_that_goes_away_mid_upsert_is_a_recoverable_db_error_and_a_rerun_has_no_duplicates(kit: Kit):
    assert kit.stop is not None and kit.start is not None
    config = kit.config(kit.collection(), batch_size=5)
    embedded = _embedded([_chunk(i) for i in range(40)])
    store = kit.open(config, "run-1")
    real_upsert = store.upsert
    calls = {"n": 0}

    def upsert_then_lose_the_server(*args: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            assert kit.stop is not None
            kit.stop()  # two batches are written, the rest is not
        real_upsert(*args)

    store.upsert = upsert_then_lose_the_server  # type: ignore[method-assign]
    try:
        with pytest.raises(IndexFoundryError) as lost:
            upsert_chunks(store, embedded, config)
    finally:
        store.close()
        kit.start()
    assert lost.value.code == "DB_ERROR" and lost.value.recoverable is True
    # Worded by the one translation of client errors (stores.translating -> store_error).
    assert re.match(r"(Chroma|PostgreSQL|Pinecone|Weaviate) [a-z_ ]+ failed: \w+: ", lost.value.message), lost.value
    assert calls["n"] == 3
    rerun = _upsert(kit, config, embedded, "run-1")
    assert rerun["verified"] and rerun["stats"]["vectors_sent"] == 30  # the two batches written stay
    store = kit.open(config, "run-1")
    try:
        stored = store.all_ids()
        assert stored == IDS[:40] and store.count() == 40
    finally:
        store.close()


# ---------------------------------------------------------------- windows of long chunks
def _windowed(chunks: list[DocumentChunk], long: dict[int, int], seed: int = 0) -> Embedded:
    """``_embedded`` plus ``long[i]`` window vectors for chunk ``i`` (as ``index.long_chunks: windows`` makes)."""
    embedded = _embedded(chunks, seed=seed)
    for i, count in long.items():
        hashes = [sha256_text(f"window {n} of chunk {i}") for n in range(1, count + 1)]
        for h in hashes:
            vector = np.random.default_rng(int(h[:8], 16) + seed).standard_normal(DIMS).astype(np.float32)
            embedded.vectors[h] = vector / np.linalg.norm(vector)
        embedded.windows[IDS[i]] = hashes
    return embedded


@stores(STORES)
def test_a_long_chunks_windows_are_vectors_of_their_own_written_found_and_pruned_with_it(kit: Kit):
    config = kit.config(kit.collection(), batch_size=7)
    embedded = _windowed([_chunk(i) for i in range(12)], {3: 2, 10: 1})
    first = _upsert(kit, config, embedded, "run-1")
    assert first["verified"] and first["stats"]["vectors_inserted"] == 15
    windows = ["chunk-003#w1", "chunk-003#w2", "chunk-010#w1"]
    assert _ids(kit, config, "run-1") == sorted([*IDS[:12], *windows])
    store = kit.open(config, "run-1")
    try:
        hit = store.query(embedded.vectors[embedded.windows[IDS[3]][1]], 1)[0]
        assert hit.id == "chunk-003#w2" and hit.score == pytest.approx(1.0, abs=1e-4)
        assert hit.metadata["source.uri"] == "docs/d3.md"  # the chunk's own metadata, filterable
        assert [
            h.id for h in store.query(embedded.vectors[embedded.windows[IDS[3]][1]], 1, {"source.uri": "docs/d4.md"})
        ] != [hit.id]
    finally:
        store.close()
    # The chunk shrinks under the window: its windows go with the prune, nothing else is rewritten.
    second = _upsert(kit, config, _windowed([_chunk(i) for i in range(12)], {10: 1}), "run-1")["stats"]
    assert (second["vectors_sent"], second["vectors_pruned"]) == (0, 2)
    assert _ids(kit, config, "run-1") == sorted([*IDS[:12], "chunk-010#w1"])
