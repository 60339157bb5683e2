"""One typed embedding-model spec (``models/embedding.py``): every reader of the model string parses it there."""

from __future__ import annotations

import pytest

from indexfoundry.backends.embedding.providers import resolve_embedder
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.embedding import (
    CohereModel,
    HashModel,
    LocalInt8Model,
    LocalModel,
    OpenAIModel,
    SentenceTransformersModel,
    parse_embedding_model,
    spec_string,
)
from indexfoundry.pipeline.preflight import embedding_problem


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local", LocalModel()),
        ("local-int8", LocalInt8Model()),
        ("hash", HashModel()),
        ("hash:64", HashModel(dimensions=64)),
        ("sentence-transformers:/models/minilm", SentenceTransformersModel(model="/models/minilm")),
        ("openai:text-embedding-3-small", OpenAIModel(model="text-embedding-3-small")),
        ("openai:text-embedding-3-small;dims=256", OpenAIModel(model="text-embedding-3-small")),
        ("cohere:embed-english-v3.0", CohereModel(model="embed-english-v3.0")),
    ],
)
def test_each_model_string_parses_to_its_typed_spec(text: str, expected: object):
    assert parse_embedding_model(text) == expected


def test_a_pinned_local_model_id_keeps_its_pin_and_prints_back():
    pinned = "local:all-MiniLM-L6-v2+onnx@abc123"
    spec = parse_embedding_model(pinned)
    assert isinstance(spec, LocalModel) and spec.pinned == pinned
    assert spec_string(spec) == pinned
    assert spec_string(parse_embedding_model("hash:64")) == "hash:64"


@pytest.mark.parametrize("text", ["lokal", "hash:x", "openai:", "voyage:model-2", "hash:0"])
def test_a_bad_model_string_is_config_invalid_in_the_parser_preflight_and_the_embedder(text: str):
    with pytest.raises(IndexFoundryError) as info:
        parse_embedding_model(text)
    assert info.value.code == "CONFIG_INVALID"
    assert embedding_problem(text) == info.value.message
    with pytest.raises(IndexFoundryError) as resolved:
        resolve_embedder(text)
    assert resolved.value.code == "CONFIG_INVALID"


def test_an_unknown_provider_gets_a_did_you_mean():
    with pytest.raises(IndexFoundryError) as info:
        parse_embedding_model("opnai:text-embedding-3-small")
    assert "did you mean 'openai'" in info.value.message


def test_the_index_config_gives_its_model_as_the_typed_spec():
    from indexfoundry.models.config import IndexConfig

    assert IndexConfig(embedding_model="hash:8").embedding_spec == HashModel(dimensions=8)
    assert IndexConfig().embedding_spec == LocalModel()
