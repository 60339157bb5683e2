"""The default `local` embedding model: offline, verified, deterministic, and good enough."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexfoundry import api
from indexfoundry.backends.embedding import local as embedders
from indexfoundry.backends.embedding.local import LOCAL_MODEL_DIMENSIONS, local_embedder
from indexfoundry.errors import EmbedError

pytestmark = pytest.mark.model


def test_a_texts_vector_is_bit_identical_whatever_else_is_in_the_call():
    model = local_embedder()
    alone = model.embed(["How do I change the theme?"])
    mixed = model.embed(["A much longer text " * 30, "How do I change the theme?", "short"])
    assert alone.shape == (1, LOCAL_MODEL_DIMENSIONS)
    assert alone[0].tobytes() == mixed[1].tobytes()
    assert abs(float(np.linalg.norm(alone[0])) - 1.0) < 1e-5


def test_model_weights_with_the_wrong_hash_are_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(embedders, "LOCAL_MODEL_SHA256", "0" * 64)
    monkeypatch.setattr(embedders, "_verified", set())
    with pytest.raises(EmbedError) as info:
        embedders.local_model_path()
    assert info.value.code == "EMBED_ERROR"


def test_default_model_finds_the_theme_pages_of_the_mkdocs_docs_and_embeds_every_window(corpora: Path, tmp_path: Path):
    from indexfoundry.app.tools.index import verify_run
    from indexfoundry.storage.atomic import iter_jsonl, read_json
    from indexfoundry.storage.layout import RunLayout

    # The default config: most chunks are longer than the model's 256-token window.
    config = {
        "connect": {
            "sources": [{"type": "folder", "path": str(corpora / "markdown/mkdocs-1.4.2/docs"), "glob": "**/*.md"}]
        },
    }
    out = api.pipeline_run(config, runs_dir=tmp_path / "runs")
    assert out.status == "completed"
    layout = RunLayout.for_run(tmp_path / "runs", out.run_id)
    over = read_json(layout.chunk_stats)["stats"]["chunks_over_window"]
    manifest = read_json(layout.vector_manifest)
    # Every chunk longer than the window is embedded in windows too, each window one vector.
    assert over > 0 and manifest["chunks_in_windows"] == over
    ids = [row["chunk_id"] for row in iter_jsonl(layout.embeddings)]
    assert manifest["vectors"] == len(ids) > len({i.split("#w")[0] for i in ids})
    assert verify_run(out.run_id, tmp_path / "runs").ok
    # The model's own ranking (the default search mode is hybrid, which mixes in BM25); chunks, each once.
    response = api.search(
        "how do I change the theme", out.run_id, runs_dir=tmp_path / "runs", top_k=10, mode="semantic"
    )
    chunk_ids = [r.chunk_id for r in response.results]
    assert len(chunk_ids) == len(set(chunk_ids)) == 10 and not any("#w" in c for c in chunk_ids)
    assert response.results[0].source.uri in {
        "docs/user-guide/choosing-your-theme.md",
        "docs/user-guide/customizing-your-theme.md",
        "docs/user-guide/configuration.md",
    }
