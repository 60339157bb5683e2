"""Chroma's metadata-free ranking (``query_scores``), which the semantic leg uses when nothing is
filtered in the store, ranks exactly as ``query`` does, namespaces included."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from indexfoundry.backends.stores.chroma import ChromaStore
from indexfoundry.models.config import VectorDbConfig


def _ids(prefix: str, n: int) -> list[str]:
    return [hashlib.sha256(f"{prefix}{i}".encode()).hexdigest() for i in range(n)]


def _store(tmp_path: Path, namespace: str | None) -> ChromaStore:
    config = VectorDbConfig.model_validate({"provider": "chroma", "collection": "docs", "namespace": namespace})
    store = ChromaStore(config, tmp_path / "chroma", tmp_path)
    store.ensure_collection("hash:8", 8)
    return store


def test_query_scores_ranks_as_query_does_and_keeps_namespaces_apart(tmp_path: Path):
    rng = np.random.default_rng(3)
    plain, spaced = _store(tmp_path, None), _store(tmp_path, "team-a")
    for store, prefix in ((plain, "p"), (spaced, "s")):
        ids = _ids(prefix, 60) + [f"{i}#w1" for i in _ids(prefix, 5)]
        vectors = rng.normal(size=(len(ids), 8)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.upsert(ids, vectors, [f"text {i}" for i in ids], [{"doc_id": prefix} for _ in ids])
    plain_ids, spaced_ids = set(plain.all_ids()), set(spaced.all_ids())
    assert len(plain_ids) == len(spaced_ids) == 65 and not plain_ids & spaced_ids
    for _ in range(5):
        query = rng.normal(size=8).astype(np.float32)
        for store, own in ((plain, plain_ids), (spaced, spaced_ids)):
            for k in (1, 10, 50, 200):
                expected = [(h.id, h.score) for h in store.query(query, k)]
                got = store.query_scores(query, k)
                assert [i for i, _ in got] == [i for i, _ in expected]
                assert np.allclose([s for _, s in got], [s for _, s in expected])
                assert {i for i, _ in got} <= own and len(got) == min(k, 65)


def test_closing_the_last_store_on_a_folder_releases_its_system_and_a_reopened_store_reads_it(tmp_path: Path):
    from chromadb.api.shared_system_client import SharedSystemClient

    first, second = _store(tmp_path, None), _store(tmp_path, None)
    ids = _ids("c", 20)
    vectors = np.eye(20, 8, dtype=np.float32) + 0.01
    first.upsert(ids, vectors, None, [{"doc_id": "d"} for _ in ids])
    folder = first.client._identifier  # chromadb keeps one system per folder, shared by its clients
    first.close()
    assert folder in SharedSystemClient._identifier_to_system  # the second store still uses it
    assert len(second.all_ids()) == 20
    second.close()
    assert folder not in SharedSystemClient._identifier_to_system  # a long-lived server keeps no old run open
    reopened = _store(tmp_path, None)
    try:
        assert sorted(reopened.all_ids()) == sorted(ids)
    finally:
        reopened.close()
