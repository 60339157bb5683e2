"""The embedder registry: one entry per provider, and the spec, the tools and the code agree with it."""

from __future__ import annotations

import importlib
import inspect
import tomllib
from pathlib import Path
from typing import get_args

import pytest

from indexfoundry.app.agent.inputs import AgentEmbedModel
from indexfoundry.app.tools.index import EmbedModel, model_spec
from indexfoundry.models.agent import AgentIndex
from indexfoundry.models.config import IndexConfig
from indexfoundry.models.embedders import (
    BUILTIN_MODELS,
    EMBEDDERS,
    PLAIN_MODELS,
    TOOL_PROVIDERS,
    BuiltinModel,
    EmbedderProvider,
    embedder_provider,
)
from indexfoundry.models.embedding import PROVIDERS, EmbeddingModelSpec, parse_embedding_model

ROOT = Path(__file__).resolve().parents[3]


def _spec_providers() -> tuple[str, ...]:
    union = get_args(EmbeddingModelSpec)[0]
    return tuple(get_args(member.model_fields["provider"].annotation)[0] for member in get_args(union))


def test_the_model_spec_has_one_variant_per_registered_embedder_in_the_registry_order():
    assert _spec_providers() == tuple(EMBEDDERS) == PROVIDERS


def test_the_names_without_a_model_and_the_agents_builtins_come_from_the_registry():
    assert PLAIN_MODELS == ("local", "local-int8", "hash")
    assert BUILTIN_MODELS == ("local", "local-int8", "hash")  # offline: an agent may pick them
    assert get_args(BuiltinModel) == BUILTIN_MODELS
    for field in (AgentEmbedModel.model_fields["builtin"], AgentIndex.model_fields["embedding_model"]):
        assert get_args(field.annotation)[0] == BuiltinModel


def test_the_index_tool_offers_each_registered_provider_once():
    assert get_args(EmbedModel.model_fields["provider"].annotation) == TOOL_PROVIDERS
    assert set(TOOL_PROVIDERS) == {entry.tool_name for entry in EMBEDDERS.values()}
    assert EmbedModel.model_json_schema()["properties"]["provider"]["enum"] == list(TOOL_PROVIDERS)


def test_an_unknown_provider_has_no_entry():
    assert embedder_provider("sentence_transformers") is None
    assert embedder_provider("cohere") is EMBEDDERS["cohere"]


@pytest.mark.parametrize("entry", EMBEDDERS.values(), ids=list(EMBEDDERS))
def test_every_embedder_is_opened_by_the_function_its_entry_names(entry: EmbedderProvider):
    module = importlib.import_module(entry.module_name)
    opener = getattr(module, entry.opener_name)
    assert list(inspect.signature(opener).parameters) == ["spec", "config", "warn"]


@pytest.mark.parametrize("entry", EMBEDDERS.values(), ids=list(EMBEDDERS))
def test_each_entry_parses_in_the_way_its_naming_says(entry: EmbedderProvider):
    if entry.naming == "model":
        assert parse_embedding_model(f"{entry.name}:some-model").provider == entry.name
    else:
        assert parse_embedding_model(entry.name).provider == entry.name
    if entry.naming == "dims":
        assert parse_embedding_model(f"{entry.name}:16") == parse_embedding_model(entry.name).model_copy(
            update={"dimensions": 16}
        )


@pytest.mark.parametrize("entry", EMBEDDERS.values(), ids=list(EMBEDDERS))
def test_an_entrys_extra_is_declared_and_a_key_needs_a_setting(entry: EmbedderProvider):
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert (entry.extra is None) == (entry.client is None)
    if entry.extra is not None:
        assert entry.extra in extras
    if entry.needs_key != "never":
        assert not entry.offline
        section, setting = str(entry.key_setting).split(".")
        assert section == "index" and setting in IndexConfig.model_fields
    else:
        assert entry.key_setting is None


@pytest.mark.parametrize("entry", [e for e in EMBEDDERS.values() if e.tool_models], ids=lambda e: e.name)
def test_the_index_tools_names_of_a_packaged_model_resolve_to_its_entry(entry: EmbedderProvider):
    for name in entry.tool_models:
        assert model_spec(EmbedModel(provider=entry.tool_name, model_name=name)) == entry.name
