"""Upsert modes, pruning, verification, model checks and the index tool commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool
from indexfoundry.errors import IndexFoundryError
from indexfoundry.phases.index import open_run_store
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_run_config
from indexfoundry.surfaces.cli import app
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder


def _store_ids(runs_dir: Path, run_id: str) -> list[str]:
    layout = RunLayout(runs_dir / run_id)
    store = open_run_store(layout, load_run_config(layout))
    try:
        return store.all_ids()
    finally:
        store.close()


def _chunk_ids(runs_dir: Path, run_id: str) -> list[str]:
    return sorted(c["chunk_id"] for c in iter_jsonl(RunLayout(runs_dir / run_id).chunks))


@pytest.mark.parametrize("provider", ["chroma", "local"])
def test_editing_a_file_rewrites_only_its_vectors_and_prunes_the_old_ones_once(
    tree, runs_dir: Path, tmp_path: Path, provider: str
):
    docs = tree(SAMPLE_DOCS)
    shared = {"provider": provider, "connection": {"path": str(tmp_path / "store")}}
    first = api.pipeline_run(folder_config(docs, index={"vector_db": shared}), runs_dir=runs_dir)
    (docs / "guide" / "install.md").write_text("# Installation\n\nJust run the installer.\n", encoding="utf-8")
    embedder = RecordingEmbedder()
    second = api.pipeline_run(folder_config(docs, index={"vector_db": shared}), runs_dir=runs_dir, embedder=embedder)
    # What this run did to the shared store is in its index phase's manifest stats (the artifact
    # upsert_stats.json counts changes against the run's own last committed index instead).
    stats = read_json(RunLayout(runs_dir / second.run_id).manifest)["phases"]["index"]["stats"]
    assert stats["store_pruned"] > 0
    assert stats["store_writes"] == len(embedder.texts) > 0  # only the changed file's chunks
    assert all("installer" in t or "Installation" in t for t in embedder.texts)
    assert _store_ids(runs_dir, second.run_id) == _chunk_ids(runs_dir, second.run_id)
    assert _chunk_ids(runs_dir, first.run_id) != _chunk_ids(runs_dir, second.run_id)


def test_upserting_another_models_vectors_into_a_collection_is_refused_until_replace(
    tree, runs_dir: Path, tmp_path: Path
):
    docs = tree(SAMPLE_DOCS)
    shared = {"provider": "chroma", "connection": {"path": str(tmp_path / "store")}}
    api.pipeline_run(folder_config(docs, index={"vector_db": shared}), runs_dir=runs_dir)
    other = api.pipeline_run(
        folder_config(docs, index={"embedding_model": "hash:64", "vector_db": shared}), runs_dir=runs_dir
    )
    assert other.status == "failed"
    assert "DB_ERROR" in RunLayout(runs_dir / other.run_id).manifest.read_text()
    replaced = api.pipeline_run(
        folder_config(docs, index={"embedding_model": "hash:64", "vector_db": {**shared, "upsert_mode": "replace"}}),
        runs_dir=runs_dir,
    )
    assert replaced.status == "completed"
    assert read_json(RunLayout(runs_dir / replaced.run_id).vector_manifest)["dimensions"] == 64


def test_insert_mode_adds_a_second_runs_vectors_without_pruning_the_first(tree, runs_dir: Path, tmp_path: Path):
    shared = {"provider": "local", "connection": {"path": str(tmp_path / "store")}, "upsert_mode": "insert"}
    a = tree({"a.md": "# Alpha\n\nAlpha text about apples.\n"}, name="a")
    b = tree({"b.md": "# Beta\n\nBeta text about bananas.\n"}, name="b")
    first = api.pipeline_run(folder_config(a, index={"vector_db": shared}), runs_dir=runs_dir)
    second = api.pipeline_run(folder_config(b, index={"vector_db": shared}), runs_dir=runs_dir)
    assert first.status == second.status == "completed"
    ids = set(_store_ids(runs_dir, second.run_id))
    assert set(_chunk_ids(runs_dir, first.run_id)) | set(_chunk_ids(runs_dir, second.run_id)) == ids


def test_namespaces_share_a_collection_without_seeing_each_other(tree, runs_dir: Path, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    base = {"provider": "chroma", "connection": {"path": str(tmp_path / "store")}}
    one = api.pipeline_run(folder_config(docs, index={"vector_db": {**base, "namespace": "one"}}), runs_dir=runs_dir)
    two = api.pipeline_run(folder_config(docs, index={"vector_db": {**base, "namespace": "two"}}), runs_dir=runs_dir)
    assert one.status == two.status == "completed"
    assert _store_ids(runs_dir, one.run_id) == _chunk_ids(runs_dir, one.run_id)
    assert _store_ids(runs_dir, two.run_id) == _chunk_ids(runs_dir, two.run_id)


def test_store_text_off_and_extra_metadata_fields_reach_the_store(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    vdb = {"provider": "local", "store_text": False, "metadata_fields": ["metadata.custom.tags", "position.line_start"]}
    out = api.pipeline_run(folder_config(docs, index={"vector_db": vdb}), runs_dir=runs_dir)
    layout = RunLayout(runs_dir / out.run_id)
    store = open_run_store(layout, load_run_config(layout))
    from indexfoundry.backends.embedding.hashing import HashEmbedder

    hits = store.query(HashEmbedder().embed(["theme colours"])[0], 3, {"metadata.custom.tags": {"$eq": "ui"}})
    assert hits and all(h.text is None and h.metadata["metadata.custom.tags"] == "ui" for h in hits)
    assert "metadata.custom.tags" in read_json(layout.vector_manifest)["metadata_schema"]


def test_index_verify_reports_missing_and_extra_ids_and_exits_1(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs, index={"vector_db": {"provider": "local"}}), runs_dir=runs_dir)
    runner = CliRunner()
    args = ["index", "verify", "--run-id", out.run_id, "--runs-dir", str(runs_dir), "--json"]
    ok = runner.invoke(app, args)
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["ok"] is True
    layout = RunLayout(runs_dir / out.run_id)
    store = open_run_store(layout, load_run_config(layout))
    victim = store.all_ids()[0]
    store.delete([victim])
    import numpy as np

    store.upsert(["f" * 64], np.ones((1, 384), dtype=np.float32), None, [{"doc_id": "x"}])
    store.close()
    bad = runner.invoke(app, args)
    assert bad.exit_code == 1
    report = json.loads(bad.output)
    assert report["missing"] == [victim] and report["extra"] == ["f" * 64]


def test_embed_and_upsert_tools_rebuild_a_store_from_the_runs_files(tree, runs_dir: Path, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    embedded = call_tool(
        "indexfoundry_index_embed",
        {"run_id": out.run_id, "model": {"provider": "hash", "model_name": "hash", "dimensions": 384}},
        runs_dir=runs_dir,
    )
    assert embedded.skipped is True  # the phase already wrote these embeddings
    upserted = call_tool(
        "indexfoundry_index_upsert",
        {
            "run_id": out.run_id,
            "provider": "qdrant",
            "connection": {"collection": "copy", "path": str(tmp_path / "qdrant")},
        },
        runs_dir=runs_dir,
    )
    assert upserted.stats.vectors_inserted == len(_chunk_ids(runs_dir, out.run_id))
    assert upserted.vector_manifest.model_used == "hash:384"
    with pytest.raises(IndexFoundryError) as info:
        call_tool(
            "indexfoundry_index_upsert",
            {"run_id": out.run_id, "provider": "weaviate", "connection": {"collection": "x"}},
            runs_dir=runs_dir,
        )
    assert info.value.code == "CONFIG_INVALID"
    from indexfoundry.backends.stores.qdrant import close_local_clients

    close_local_clients()


def test_index_embed_and_upsert_commands_print_json(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    runner = CliRunner()
    common = ["--run-id", out.run_id, "--runs-dir", str(runs_dir), "--json"]
    embed = runner.invoke(app, ["index", "embed", *common, "--force"])
    assert embed.exit_code == 0, embed.output
    assert json.loads(embed.output)["model_used"] == "hash:384"
    upsert = runner.invoke(app, ["index", "upsert", *common])
    assert upsert.exit_code == 0, upsert.output
    assert json.loads(upsert.output)["stats"]["vectors_sent"] == 0  # nothing changed
