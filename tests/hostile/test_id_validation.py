"""Ids and names are validated by full matches: a run id with a trailing
newline passed ``re.match`` with ``$`` and created a folder named ``<uuid>\\n``. Every
validator refuses trailing and leading newlines, carriage returns and spaces, through the
library, the tool schemas (MCP) and HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from indexfoundry import api
from indexfoundry.app.tools.registry import load_tools
from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.pipeline.inuse import mark_in_use
from indexfoundry.storage.layout import RunLayout, is_run_id
from tests.conftest import folder_config, write_tree

RUN_ID = "0190d5a8-7c2e-7b3a-9f1e-3c4d5e6f7a8b"
SUFFIXES = ["\n", "\r\n", "\r", " ", "\t", "\x00", "\u2028", "/../x"]
PREFIXES = ["\n", " ", "../"]


def _variants(value: str) -> list[str]:
    return [value + s for s in SUFFIXES] + [p + value for p in PREFIXES]


@pytest.mark.parametrize("value", _variants(RUN_ID))
def test_a_run_id_with_anything_around_it_is_not_a_run_id(value: str):
    assert is_run_id(RUN_ID)
    assert not is_run_id(value)
    with pytest.raises(IndexFoundryError) as caught:
        RunLayout.for_run(Path("/nonexistent"), value)
    assert caught.value.code == "RUN_NOT_FOUND"


def test_a_rerun_with_a_newline_in_the_run_id_creates_no_folder(tmp_path: Path, runs_dir: Path):
    folder = write_tree(tmp_path / "docs", {"a.md": "# A\n\nSome text long enough to be a chunk of its own.\n"})
    config = folder_config(folder, index={"embedding_model": "hash"})
    with pytest.raises(IndexFoundryError) as caught:
        api.pipeline_run(config, runs_dir=runs_dir, run_id=RUN_ID + "\n")
    assert caught.value.code == "RUN_NOT_FOUND"
    assert list(runs_dir.iterdir()) == []


def _run_id_fields() -> list[tuple[str, type[BaseModel], str]]:
    """Tool input fields holding a run id that the schema itself constrains (a pattern)."""
    found: list[tuple[str, type[BaseModel], str]] = []
    for name, spec in load_tools().items():
        properties = spec.input_model.model_json_schema().get("properties", {})
        for field_name, schema in properties.items():
            if "run_id" in field_name and "pattern" in schema:
                found.append((name, spec.input_model, field_name))
    return found


@pytest.mark.parametrize(
    ("tool", "model", "field_name"), _run_id_fields(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_tool_schema_with_a_run_id_pattern_refuses_a_trailing_newline(
    tool: str, model: type[BaseModel], field_name: str
):
    for value in _variants(RUN_ID):
        with pytest.raises(ValidationError) as caught:
            model.model_validate({field_name: value})
        assert any(error["loc"] == (field_name,) for error in caught.value.errors()), (tool, value)


def test_the_tools_with_a_run_id_pattern_are_found():
    assert len(_run_id_fields()) >= 8


@pytest.mark.parametrize("value", _variants(RUN_ID))
def test_run_ids_without_a_schema_pattern_are_refused_where_they_are_resolved(value: str, runs_dir: Path):
    # indexfoundry_run_status / _run_diff / pipeline_run's base_run_id take 'latest' too and
    # reach the run layout, which refuses anything but a full run id.
    for call in (
        lambda: api.status(value, runs_dir=runs_dir),
        lambda: api.diff(value, RUN_ID, runs_dir=runs_dir),
    ):
        with pytest.raises(IndexFoundryError) as caught:
            call()
        assert caught.value.code == "RUN_NOT_FOUND"
    assert list(runs_dir.iterdir()) == []


@pytest.mark.parametrize("value", ["docs\n", "docs\r\n", "\ndocs", "docs "])
def test_store_collection_names_with_a_newline_are_refused(value: str, tmp_path: Path):
    from indexfoundry.backends.stores.chroma import ChromaStore

    with pytest.raises(ConfigInvalid):
        ChromaStore(VectorDbConfig(collection=value), tmp_path / "chroma", tmp_path)
    pytest.importorskip("pymilvus")
    from indexfoundry.backends.stores.milvus import MilvusStore

    with pytest.raises(ConfigInvalid):
        MilvusStore(VectorDbConfig(provider="milvus", collection=value), tmp_path / "milvus.db")


def test_an_in_use_mark_with_a_newline_in_its_kind_is_refused(runs_dir: Path):
    with pytest.raises(ValueError):
        mark_in_use(runs_dir, RUN_ID, "serve\n", 1)
    with pytest.raises(ValueError):
        mark_in_use(runs_dir, RUN_ID + "\n", "serve", 1)
