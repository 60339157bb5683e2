from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.config import FolderSource, load_pipeline_config, pipeline_config_schema
from tests.conftest import write_config


def test_yaml_and_json_configs_load_to_the_same_model(tmp_path: Path):
    raw = {"connect": {"sources": [{"type": "folder", "path": "docs"}]}, "index": {"embedding_model": "hash"}}
    a = load_pipeline_config(write_config(tmp_path / "a.yaml", raw))
    (tmp_path / "a.json").write_text(json.dumps(raw))
    b = load_pipeline_config(tmp_path / "a.json")  # the same name: the pipeline is named after the file
    assert a == b


def test_relative_folder_paths_resolve_against_the_config_file(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    config = load_pipeline_config(
        write_config(tmp_path / "sub" / "c.yaml", {"connect": {"sources": [{"type": "folder", "path": "docs"}]}})
    )
    source = config.connect.sources[0]
    assert isinstance(source, FolderSource)
    assert source.path == str((tmp_path / "sub" / "docs").resolve())
    assert source.name == "docs"


def test_unknown_key_is_config_invalid_naming_the_key_path(tmp_path: Path):
    path = write_config(tmp_path / "c.yaml", {"connect": {"sources": [{"type": "folder", "path": "d", "globb": "*"}]}})
    with pytest.raises(ConfigInvalid) as info:
        load_pipeline_config(path)
    assert info.value.code == "CONFIG_INVALID"
    assert "connect.sources[0].globb: unknown key" in info.value.message
    assert info.value.suggestion


def test_wrong_type_is_config_invalid(tmp_path: Path):
    path = write_config(
        tmp_path / "c.yaml",
        {"connect": {"sources": [{"type": "folder", "path": "d"}]}, "normalize": {"max_chars": "big"}},
    )
    with pytest.raises(ConfigInvalid) as info:
        load_pipeline_config(path)
    assert "normalize.max_chars" in info.value.message


def test_broken_yaml_is_config_invalid(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("connect: [unclosed\n")
    with pytest.raises(ConfigInvalid):
        load_pipeline_config(path)


def test_missing_config_file_is_config_invalid(tmp_path: Path):
    with pytest.raises(ConfigInvalid):
        load_pipeline_config(tmp_path / "nope.yaml")


def test_schema_describes_every_top_level_section():
    schema = pipeline_config_schema()
    assert set(schema["properties"]) >= {"connect", "extract", "normalize", "index", "serve", "force", "stop_on_error"}
    assert schema["additionalProperties"] is False
