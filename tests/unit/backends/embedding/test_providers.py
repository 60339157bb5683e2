"""Embedder resolution, model ids, the hash embedder's vectors and torch's thread count (no network, no model)."""

from __future__ import annotations

import pytest

from indexfoundry.backends.embedding.providers import (
    HashEmbedder,
    OpenAIEmbedder,
    api_model_id,
    configure_torch_threads,
    resolve_embedder,
)
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import IndexConfig


def test_model_ids_name_model_dimensions_and_server_without_credentials():
    assert api_model_id("openai", "text-embedding-3-small", None, None) == "openai:text-embedding-3-small"
    assert (
        api_model_id("openai", "nomic", 256, "http://user:pw@127.0.0.1:11434/v1/?x=1")
        == "openai:nomic;dims=256;base=127.0.0.1:11434/v1"
    )


def test_a_manifest_model_id_resolves_back_to_the_same_embedder():
    config = IndexConfig(base_url="http://127.0.0.1:9/v1", dimensions=32)
    first = resolve_embedder("openai:m", config)
    assert isinstance(first, OpenAIEmbedder)
    assert resolve_embedder(first.model_id, config).model_id == first.model_id


def test_hash_specs_and_unknown_specs():
    assert resolve_embedder("hash:16").dimensions == 16
    assert isinstance(resolve_embedder("hash", IndexConfig(dimensions=8)), HashEmbedder)
    for bad in ("nope", "mystery:model", "hash:x"):
        with pytest.raises(IndexFoundryError) as info:
            resolve_embedder(bad)
        assert info.value.code == "CONFIG_INVALID"


def test_local_models_refuse_other_dimensions():
    with pytest.raises(IndexFoundryError) as info:
        resolve_embedder("local", IndexConfig(dimensions=128))
    assert info.value.code == "CONFIG_INVALID"


def test_hash_vectors_do_not_depend_on_batch_composition():
    embedder = HashEmbedder(64)
    alone = embedder.embed(["alpha beta"])[0]
    together = embedder.embed(["gamma", "alpha beta", "delta"])[1]
    assert alone.tobytes() == together.tobytes()


def test_hash_vectors_keep_their_bytes_from_the_word_by_word_implementation():
    # sha256 of the vectors the word-by-word loop (before numpy counting) made for these texts.
    import hashlib

    texts = ["The cat sat on the mat; the CAT sat.", "", "d\u00e9lta \u72ac a_b 42 x x x"]
    texts.append("theme colours and fonts " * 50)
    digests = [hashlib.sha256(HashEmbedder(n).embed(texts).tobytes()).hexdigest() for n in (384, 7)]
    assert digests == [
        "8a33f2579fbae053fc9e24333f6544938d0b3dd9b9d98df6f2fbe4aed4f29474",
        "74af4352cccc2c2b3dfb86a54259e8a4937f638f6a2469aa30b8f79d94d030a5",
    ]


def test_torch_threads_follow_the_embed_thread_setting(monkeypatch: pytest.MonkeyPatch):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("INDEXFOUNDRY_EMBED_THREADS", "1")
        assert configure_torch_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.delenv("INDEXFOUNDRY_EMBED_THREADS")
        assert 1 <= configure_torch_threads() <= 4
    finally:
        torch.set_num_threads(before)
