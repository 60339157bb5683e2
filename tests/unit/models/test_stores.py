"""The store registry: one entry per provider, and the config, the tools and the code agree with it."""

from __future__ import annotations

import importlib
import inspect
import tomllib
from pathlib import Path
from typing import get_args

import pytest

from indexfoundry.app.tools.index import IndexUpsertInput
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.models.connections import StoreConnection
from indexfoundry.models.stores import STORES, StoreProvider, store_provider
from indexfoundry.storage.layout import RunLayout

ROOT = Path(__file__).resolve().parents[3]


def test_the_config_accepts_exactly_the_registered_stores_in_the_registry_order():
    assert get_args(VectorDbConfig.model_fields["provider"].annotation) == tuple(STORES)
    assert VectorDbConfig.model_json_schema()["properties"]["provider"]["enum"] == list(STORES)


def test_the_upsert_tool_and_the_connections_file_name_the_same_stores_as_the_config():
    for model in (IndexUpsertInput, StoreConnection):
        assert get_args(model.model_fields["provider"].annotation) == tuple(STORES)


def test_an_unknown_provider_has_no_entry():
    assert store_provider("chromadb") is None
    assert store_provider("pgvector") is STORES["pgvector"]


@pytest.mark.parametrize("entry", STORES.values(), ids=list(STORES))
def test_every_store_module_opens_its_store_with_the_config_and_the_run_layout(entry: StoreProvider):
    module = importlib.import_module(entry.module_name)
    assert list(inspect.signature(module.open_store).parameters) == ["config", "layout"]
    if entry.releases_runs:
        assert list(inspect.signature(module.release_run).parameters) == ["config", "layout"]


@pytest.mark.parametrize("entry", STORES.values(), ids=list(STORES))
def test_a_publishing_store_stages_and_switches_and_the_others_serve_at_once(entry: StoreProvider):
    module = importlib.import_module(entry.module_name)
    store_class = inspect.signature(module.open_store).return_annotation
    store_class = getattr(module, store_class) if isinstance(store_class, str) else store_class
    for method in ("prepare_publish", "publish"):
        assert hasattr(store_class, method) is entry.publishes, method


@pytest.mark.parametrize("entry", STORES.values(), ids=list(STORES))
def test_an_embedded_stores_place_is_a_path_of_the_run_layout(entry: StoreProvider, tmp_path: Path):
    if entry.run_path is None:
        assert not entry.copies_base
        return
    place = getattr(RunLayout(tmp_path / "run-1"), entry.run_path)
    assert isinstance(place, Path) and place.is_relative_to(tmp_path / "run-1")


def test_every_stores_extra_is_declared_in_the_package():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for entry in STORES.values():
        assert (entry.extra is None) is (entry.client is None), entry.name
        if entry.extra is not None:
            assert entry.extra in extras, entry.name


def test_concurrent_writers_follow_the_connection():
    assert STORES["pgvector"].concurrent_writers({}) and STORES["pinecone"].concurrent_writers({})
    assert not STORES["chroma"].concurrent_writers({"path": "x"})
    assert STORES["chroma"].concurrent_writers({"host": "127.0.0.1"})
    assert STORES["qdrant"].concurrent_writers({"url": "http://q:6333"})
    assert not STORES["milvus"].concurrent_writers({"uri": "store.db"})
    assert STORES["milvus"].concurrent_writers({"uri": "http://m:19530"})
    assert not STORES["weaviate"].concurrent_writers({"url": "http://w:8080"})
    assert not STORES["local"].concurrent_writers({})
