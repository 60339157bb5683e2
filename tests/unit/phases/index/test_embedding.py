"""The embedding cache keeps vectors of another device apart."""

from __future__ import annotations

from indexfoundry.backends.embedding.hashing import HashEmbedder
from indexfoundry.phases.executor import LocalExecutor
from indexfoundry.phases.index.embedding import cache_model_key


def test_gpu_vectors_are_cached_apart_from_cpu_vectors():
    assert cache_model_key("local:m", "cpu") == "local:m"
    assert cache_model_key("local:m", "cuda") == "local:m|cuda"
    assert LocalExecutor().embedding_device(HashEmbedder(8)) == "cpu"
