"""The single-purpose tools as an agent calls them: connection names resolved, paths kept in the roots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.app.agent import AGENT_INPUTS, AS_IS
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree
from tests.hostile.agents import agent_server, call, code, structured


def test_every_registered_tool_is_exposed_as_is_or_with_an_agent_input_and_never_both():
    registered = set(api.tool_specs())
    assert registered == AS_IS | set(AGENT_INPUTS)
    assert not AS_IS & set(AGENT_INPUTS)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Any, str]:
    docs = write_tree(tmp_path / "root" / "docs", SAMPLE_DOCS)
    run = api.pipeline_run(folder_config(docs), runs_dir=tmp_path / "runs")
    assert run.status == "completed"
    connections = {
        "embeddings": {"small": {"model": "hash:16"}},
        "stores": {
            "files": {"provider": "local", "path": str(tmp_path / "vectors")},
            "shared": {"provider": "local", "path": str(tmp_path / "shared"), "collection": "team"},
        },
        "rerankers": {"rr": {"model": "http:http://127.0.0.1:9/rerank", "api_key_env": "RERANK_API_KEY"}},
    }
    return agent_server(tmp_path / "runs", [tmp_path / "root"], connections), run.run_id


def test_embed_and_upsert_name_a_connection_or_a_built_in(built: tuple[Any, str], tmp_path: Path):
    server, run_id = built
    embed, upsert, inrun, wrong, bad = call(
        server,
        ("indexfoundry_index_embed", {"run_id": run_id, "model": {"connection": "small"}, "force": True}),
        ("indexfoundry_index_upsert", {"run_id": run_id, "connection": "files", "collection": "docs"}),
        ("indexfoundry_index_upsert", {"run_id": run_id, "provider": "local", "collection": "docs"}),
        ("indexfoundry_index_upsert", {"run_id": run_id, "connection": "shared", "collection": "other"}),
        ("indexfoundry_index_embed", {"run_id": run_id, "model": {"connection": "nope"}}),
    )
    assert code(embed) is None and structured(embed)["model_used"].startswith("hash:16"), structured(embed)
    assert code(upsert) is None and (tmp_path / "vectors").is_dir(), structured(upsert)
    assert code(inrun) is None, structured(inrun)
    assert code(wrong) == "CONFIG_INVALID" and "'team' only" in structured(wrong)["error"]["message"]
    assert code(bad) == "CONFIG_INVALID" and structured(bad)["error"]["details"]["names"] == ["small"]


def test_a_profile_reranks_with_a_reranker_connection(built: tuple[Any, str], tmp_path: Path):
    server, run_id = built
    reranker = {"enabled": True, "connection": "rr", "top_k_to_rerank": 20}
    (profile,) = call(
        server, ("indexfoundry_index_build_profile", {"run_id": run_id, "retrieval_config": {"reranker": reranker}})
    )
    assert code(profile) is None, structured(profile)
    written = json.loads((tmp_path / "runs" / run_id / "served" / "retrieval_profile.json").read_text())
    chosen = written["retrieval_config"]["reranker"]
    assert (chosen["model"], chosen["api_key_env"], chosen["top_k_to_rerank"]) == (
        "http:http://127.0.0.1:9/rerank",
        "RERANK_API_KEY",
        20,
    )


def test_the_tools_refuse_destinations_and_keep_paths_in_the_roots(built: tuple[Any, str], tmp_path: Path):
    server, run_id = built
    results = call(
        server,
        ("indexfoundry_serve_start", {"run_id": run_id, "host": "0.0.0.0"}),
        ("indexfoundry_index_embed", {"run_id": run_id, "model": {"builtin": "hash", "base_url": "http://x/"}}),
        ("indexfoundry_index_upsert", {"run_id": run_id, "provider": "qdrant", "collection": "x"}),
        ("indexfoundry_index_upsert", {"run_id": run_id, "connection": "files", "path": "/tmp"}),
        (
            "indexfoundry_index_build_profile",
            {"run_id": run_id, "retrieval_config": {"reranker": {"model": "cohere:x"}}},
        ),
        ("indexfoundry_connect_folder", {"run_id": run_id, "path": str(tmp_path)}),
        ("indexfoundry_connect_pdf", {"run_id": run_id, "source": "/etc/hostname"}),
        ("indexfoundry_connect_repo", {"run_id": run_id, "path": "../.."}),
    )
    codes = [code(r) for r in results]
    assert codes == ["CONFIG_INVALID"] * 5 + ["NOT_FOUND"] * 3, [structured(r) for r in results]
