"""The embedding cache (``backends/embedding/cache.py``): (model, text hash) -> float32 vector, in one
SQLite file per runs folder, shared by every run and process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from indexfoundry.backends.embedding.cache import EmbeddingCache
from tests.conftest import REPO


def _vector(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def test_vectors_come_back_bit_identical_as_float32_for_the_hashes_present(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / ".cache" / "embeddings.sqlite")
    stored = {"h1": _vector(0.1, -2.5, 3.0), "h2": _vector(1e-30, 7.0, 0.0)}
    cache.put_many("hash:3", stored)
    found = cache.get_many("hash:3", ["h2", "missing", "h1", "h1"])
    assert set(found) == {"h1", "h2"}
    for key, vector in stored.items():
        assert found[key].dtype == np.float32
        assert found[key].tobytes() == vector.tobytes()
    cache.close()


def test_the_same_text_under_two_models_is_two_entries(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    cache.put_many("model-a", {"h": _vector(1.0, 0.0)})
    cache.put_many("model-b", {"h": _vector(0.0, 1.0, 0.5)})
    assert cache.get_many("model-a", ["h"])["h"].tolist() == [1.0, 0.0]
    assert cache.get_many("model-b", ["h"])["h"].tolist() == [0.0, 1.0, 0.5]
    assert cache.get_many("model-c", ["h"]) == {}
    cache.close()


def test_storing_a_hash_again_replaces_its_vector(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    cache.put_many("m", {"h": _vector(1.0)})
    cache.put_many("m", {"h": _vector(2.0)})
    assert cache.get_many("m", ["h"])["h"].tolist() == [2.0]
    cache.close()


def test_more_hashes_than_one_query_takes_are_all_found(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    items = {f"h{i}": _vector(float(i)) for i in range(1234)}
    cache.put_many("m", items)
    found = cache.get_many("m", list(items))
    assert len(found) == 1234 and found["h1233"].tolist() == [1233.0]
    cache.close()


def test_what_one_process_stored_another_reads_and_a_reopened_cache_still_has(tmp_path: Path):
    path = tmp_path / "embeddings.sqlite"
    script = (
        "import sys, numpy as np; from pathlib import Path; "
        "from indexfoundry.backends.embedding.cache import EmbeddingCache; "
        "c = EmbeddingCache(Path(sys.argv[1])); c.put_many('m', {'other': np.array([0.5, 0.25], dtype=np.float32)}); "
        "c.close()"
    )
    cache = EmbeddingCache(path)
    cache.put_many("m", {"mine": _vector(4.0, 2.0)})
    subprocess.run(
        [sys.executable, "-c", script, str(path)],
        check=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
    )
    assert cache.get_many("m", ["other"])["other"].tolist() == [0.5, 0.25]
    cache.close()
    reopened = EmbeddingCache(path)
    assert set(reopened.get_many("m", ["mine", "other"])) == {"mine", "other"}
    reopened.close()
