"""Embedder resolution: a model string (or a manifest's model id) opens its embedder (no network, no model)."""

from __future__ import annotations

import pytest

from indexfoundry.backends.embedding.hashing import HashEmbedder
from indexfoundry.backends.embedding.providers import resolve_embedder
from indexfoundry.backends.embedding.remote import OpenAIEmbedder
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import IndexConfig


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
