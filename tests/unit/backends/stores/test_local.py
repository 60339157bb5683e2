"""The local numpy store: exact cosine search, ties by id, filters, persistence, integrity."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexfoundry.backends.stores import matches, parse_where
from indexfoundry.backends.stores.local import LocalStore
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import VectorDbConfig


def _store(path: Path, **kw: object) -> LocalStore:
    return LocalStore(VectorDbConfig(provider="local", **kw), path)  # type: ignore[arg-type]


def _fill(store: LocalStore) -> None:
    store.ensure_collection("m", 2)
    vectors = np.array([[1, 0], [0, 1], [1, 1], [1, 0]], dtype=np.float32)
    metas = [{"n": 1, "k": "a"}, {"n": 2, "k": "b"}, {"n": 3, "k": "a"}, {"n": 4}]
    store.upsert(["d", "b", "c", "a"], vectors, ["td", "tb", "tc", "ta"], metas)  # type: ignore[arg-type]


def test_query_ranks_by_cosine_and_breaks_ties_by_id(tmp_path: Path):
    store = _store(tmp_path)
    _fill(store)
    hits = store.query(np.array([1, 0], dtype=np.float32), 3)
    assert [h.id for h in hits] == ["a", "d", "c"]
    assert hits[0].score == pytest.approx(1.0) and hits[0].text == "ta"


def test_filters_follow_chroma_semantics_and_missing_fields_never_match(tmp_path: Path):
    store = _store(tmp_path)
    _fill(store)
    q = np.array([1, 1], dtype=np.float32)
    assert sorted(h.id for h in store.query(q, 10, {"k": {"$eq": "a"}})) == ["c", "d"]
    assert sorted(h.id for h in store.query(q, 10, {"k": {"$ne": "a"}})) == ["b"]
    assert sorted(h.id for h in store.query(q, 10, {"$or": [{"n": {"$gte": 4}}, {"k": "b"}]})) == ["a", "b"]
    assert not matches(parse_where({"n": {"$gt": "x"}}), {"n": 1})


def test_store_persists_on_close_with_byte_identical_files(tmp_path: Path):
    for name in ("one", "two"):
        store = _store(tmp_path / name)
        _fill(store)
        store.close()
    for file in ("vectors.npy", "records.jsonl", "collection.json"):
        assert (tmp_path / "one" / "indexfoundry" / file).read_bytes() == (
            tmp_path / "two" / "indexfoundry" / file
        ).read_bytes()
    reopened = _store(tmp_path / "one")
    assert reopened.all_ids() == ["a", "b", "c", "d"]


def test_a_half_written_store_and_another_model_are_db_errors(tmp_path: Path):
    store = _store(tmp_path)
    _fill(store)
    store.close()
    with pytest.raises(IndexFoundryError) as other:
        _store(tmp_path).ensure_collection("other-model", 2)
    assert other.value.code == "DB_ERROR"
    (tmp_path / "indexfoundry" / "records.jsonl").write_text("{}\n")
    with pytest.raises(IndexFoundryError) as broken:
        _store(tmp_path).all_ids()
    assert broken.value.code == "DB_ERROR"


def test_namespaces_keep_the_same_chunk_id_apart(tmp_path: Path):
    a, b = _store(tmp_path, namespace="a"), _store(tmp_path, namespace="b")
    for store in (a, b):
        store.ensure_collection("m", 2)
    a.upsert(["x"], np.array([[1, 0]], dtype=np.float32), None, [{}])
    a.close()
    b = _store(tmp_path, namespace="b")
    b.upsert(["x"], np.array([[0, 1]], dtype=np.float32), None, [{}])
    b.close()
    assert _store(tmp_path, namespace="a").all_ids() == ["x"]
    hit = _store(tmp_path, namespace="b").query(np.array([0, 1], dtype=np.float32), 1)[0]
    assert hit.id == "x" and hit.score == pytest.approx(1.0)
