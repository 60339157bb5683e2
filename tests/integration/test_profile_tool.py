"""The build-profile tool's profile survives serve reruns and drives the OpenAPI spec."""

from __future__ import annotations

import json
from pathlib import Path

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder


def test_a_built_profile_is_kept_when_the_serve_phase_is_forced_again(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    call_tool(
        "indexfoundry_index_build_profile",
        {
            "run_id": out.run_id,
            "retrieval_config": {"default_top_k": 3, "search_modes": ["keyword"]},
            "allowed_filters": [{"field": "source.uri", "operators": ["eq"]}],
        },
        runs_dir=runs_dir,
    )
    layout = RunLayout(runs_dir / out.run_id)
    api.run_phase("serve", out.run_id, runs_dir=runs_dir, force=True)
    profile = json.loads(layout.retrieval_profile.read_text())
    assert profile["retrieval_config"]["search_modes"] == ["keyword"]
    assert profile["retrieval_config"]["default_top_k"] == 3
    assert [f["field"] for f in profile["allowed_filters"]] == ["source.uri"]
    spec = layout.openapi.read_text()
    assert "/search/keyword" in spec
