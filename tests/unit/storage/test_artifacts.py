"""Typed, versioned artifacts (``models/artifacts.py``) written and read through ``storage/artifacts.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.artifacts import UpsertStats, VectorManifest
from indexfoundry.models.config import PipelineConfig
from indexfoundry.storage.artifacts import read_artifact, write_artifact
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import frozen_config, load_run_config, read_frozen_config, write_frozen_config


def _manifest() -> VectorManifest:
    return VectorManifest(
        collection="indexfoundry",
        namespace=None,
        model_used="hash:64",
        dimensions=64,
        metadata_schema=["doc_id"],
        store_text=True,
        store={"provider": "local", "path": "indexed/local"},
        vectors=3,
    )


def test_an_artifact_is_written_with_its_schema_version_and_its_fields_as_before(tmp_path: Path):
    path = tmp_path / "vector_manifest.json"
    write_artifact(path, _manifest())
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == 1
    assert data["namespace"] is None  # a field given as None is still written, as before the models
    assert read_artifact(path, VectorManifest) == _manifest()


def test_optional_counters_no_writer_gave_stay_out_of_the_file(tmp_path: Path):
    path = tmp_path / "upsert_stats.json"
    stats = {
        "vectors": 3,
        "vectors_inserted": 3,
        "vectors_updated": 0,
        "vectors_unchanged": 0,
        "vectors_pruned": 0,
        "vectors_failed": 0,
    }
    body = {"stats": stats, "upsert_mode": "upsert", "batch_size": 100, "verified": True, "extra_ids": 0}
    write_artifact(path, UpsertStats.model_validate(body))
    assert json.loads(path.read_text(encoding="utf-8")) == {**body, "schema_version": 1}


def test_a_file_from_before_versioning_reads_as_version_one(tmp_path: Path):
    path = tmp_path / "vector_manifest.json"
    data = _manifest().model_dump(mode="json")
    del data["schema_version"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert read_artifact(path, VectorManifest).schema_version == 1


@pytest.mark.parametrize("version", [2, "1", None])
def test_a_newer_or_unreadable_schema_version_is_refused_with_config_invalid(tmp_path: Path, version: object):
    path = tmp_path / "vector_manifest.json"
    path.write_text(json.dumps({**_manifest().model_dump(mode="json"), "schema_version": version}), encoding="utf-8")
    with pytest.raises(IndexFoundryError) as info:
        read_artifact(path, VectorManifest)
    assert info.value.code == "CONFIG_INVALID"
    assert info.value.suggestion and "Upgrade" in info.value.suggestion


def test_a_damaged_artifact_is_config_invalid(tmp_path: Path):
    path = tmp_path / "vector_manifest.json"
    path.write_text(json.dumps({"schema_version": 1, "collection": "c"}), encoding="utf-8")
    with pytest.raises(IndexFoundryError) as info:
        read_artifact(path, VectorManifest)
    assert info.value.code == "CONFIG_INVALID"


def test_the_frozen_config_carries_a_schema_version_and_a_newer_one_is_refused(tmp_path: Path):
    layout = RunLayout(tmp_path / "run")
    layout.root.mkdir()
    frozen = frozen_config(PipelineConfig.model_validate({"connect": {"sources": [{"type": "folder", "path": "."}]}}))
    write_frozen_config(layout, frozen)
    assert json.loads(layout.config.read_text(encoding="utf-8"))["schema_version"] == 1
    assert read_frozen_config(layout) == frozen
    assert load_run_config(layout).connect.sources[0].type == "folder"
    layout.config.write_text(json.dumps({**frozen, "schema_version": 9}), encoding="utf-8")
    with pytest.raises(IndexFoundryError) as info:
        load_run_config(layout)
    assert info.value.code == "CONFIG_INVALID"
