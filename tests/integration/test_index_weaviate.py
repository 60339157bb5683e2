"""``provider: weaviate`` end to end through the official ``weaviate-client`` v4 against the local
emulator of Weaviate's REST and gRPC APIs (``tests/emulators/weaviate.py``; no live Weaviate
server is reached): a pipeline run serves the same top-10 as Chroma, ``index verify`` is clean,
and the API key never reaches the run's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexfoundry.app.tools.index import verify_run
from tests.integration.test_index_stores import _index, _same_up_to_ties, _top10


def test_a_weaviate_run_serves_the_same_top10_as_chroma_and_verifies_clean(
    tree, runs_dir: Path, weaviate_emulator: Any, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("WEAVIATE_API_KEY", weaviate_emulator.api_key)
    reference = _top10(_index(tree, runs_dir, {"provider": "chroma"}), runs_dir)
    vector_db = {
        "provider": "weaviate",
        "collection": "pipeline-docs",
        "connection": {
            "url": weaviate_emulator.url,
            "grpc_url": weaviate_emulator.grpc_url,
            "api_key_env": "WEAVIATE_API_KEY",
        },
    }
    run_id = _index(tree, runs_dir, vector_db)
    for ref, got in zip(reference, _top10(run_id, runs_dir), strict=True):
        _same_up_to_ties(ref, got)
    assert verify_run(run_id, runs_dir).ok
    # The client's own calls reached the emulator (counts go through Aggregate in the contract suite;
    # verify compares ids, so a run needs no count).
    assert {"POST /v1/schema", "grpc BatchObjects", "grpc Search"} <= set(weaviate_emulator.requests)
    written = "".join(p.read_text(errors="replace") for p in (runs_dir / run_id).rglob("*") if p.is_file())
    assert weaviate_emulator.api_key not in written and "WEAVIATE_API_KEY" in written


def test_a_long_lived_reader_follows_a_collection_rebuilt_under_it(weaviate_emulator: Any, tmp_path: Path):
    import numpy as np

    from indexfoundry.backends.stores import open_store
    from indexfoundry.models.config import VectorDbConfig
    from indexfoundry.storage.layout import RunLayout

    connection = {"url": weaviate_emulator.url, "grpc_url": weaviate_emulator.grpc_url, "api_key_env": "WV_KEY"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WV_KEY", weaviate_emulator.api_key)
        config = VectorDbConfig(provider="weaviate", collection="rebuilt", connection=connection)
        vectors = np.eye(4, dtype=np.float32)
        writer = open_store(config, RunLayout(tmp_path / "run-1"))
        reader = open_store(config, RunLayout(tmp_path / "run-2"))
        try:
            writer.ensure_collection("model-a", 4)
            writer.upsert(["a", "b"], vectors[:2], None, [{"page": 1}, {"page": 2}])
            assert [h.id for h in reader.query(vectors[0], 5, {"page": {"$gte": 2}})] == ["b"]
            # Rebuilt by another run: the 'page' property is gone, 'lang' is new.
            writer.ensure_collection("model-a", 4, reset=True)
            writer.upsert(["c"], vectors[2:3], None, [{"lang": "en"}])
            assert reader.query(vectors[0], 5, {"page": {"$gte": 2}}) == []
            assert [h.id for h in reader.query(vectors[0], 5, {"lang": "en"})] == ["c"]
        finally:
            writer.close()
            reader.close()
