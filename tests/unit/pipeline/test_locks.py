"""The shared-store lock (``pipeline/locks.py``): runs writing one configured store take turns."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from indexfoundry.models.config import VectorDbConfig
from indexfoundry.pipeline.locks import shared_store_key, shared_store_lock
from indexfoundry.storage.layout import locks_dir


def _store(**connection: object) -> VectorDbConfig:
    return VectorDbConfig.model_validate({"provider": "chroma", "connection": connection})


def test_a_store_inside_the_run_has_no_shared_key(tmp_path: Path):
    assert shared_store_key(VectorDbConfig(), tmp_path) is None


def test_one_folder_named_two_ways_is_one_store_and_another_collection_is_another(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    plain = shared_store_key(_store(path="store"), tmp_path)
    roundabout = shared_store_key(_store(path="sub/../store"), tmp_path)
    absolute = shared_store_key(_store(path=str(tmp_path / "store")), tmp_path / "elsewhere")
    assert plain is not None and plain == roundabout == absolute
    other = VectorDbConfig.model_validate({"collection": "other", "connection": {"path": "store"}})
    assert shared_store_key(other, tmp_path) != plain
    assert shared_store_key(_store(path="store2"), tmp_path) != plain


def test_a_server_store_is_keyed_by_host_and_port(tmp_path: Path):
    one = shared_store_key(_store(host="127.0.0.1", port=8000), tmp_path)
    assert one == shared_store_key(_store(host="127.0.0.1", port=8000), tmp_path / "x")
    assert one != shared_store_key(_store(host="127.0.0.1", port=8001), tmp_path)


def _is_locked(lock_file: Path) -> bool:
    with lock_file.open("a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False


def test_the_lock_is_held_for_the_block_only_and_an_embedded_store_takes_no_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    with shared_store_lock(runs, VectorDbConfig()):
        assert not locks_dir(runs).exists()
    config = _store(path="store")
    with shared_store_lock(runs, config):
        (lock_file,) = locks_dir(runs).glob("store-*.lock")
        assert _is_locked(lock_file)
    assert not _is_locked(lock_file)
    with pytest.raises(RuntimeError), shared_store_lock(runs, config):
        raise RuntimeError("the index phase failed")
    assert not _is_locked(lock_file)
