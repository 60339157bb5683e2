"""A run an agent builds by naming the operator's connections is the run the operator's full config
builds: byte-identical content artifacts, the same frozen config, manifests equal but for timing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from tests.conftest import SAMPLE_DOCS, write_tree
from tests.determinism.test_byte_identical import content_files, manifest_without_timing
from tests.hostile.agents import agent_server, call, structured
from tests.hostile.listeners import CANARIES, Recorder


@pytest.fixture
def site() -> Any:
    server = Recorder()
    try:
        yield server
    finally:
        server.close()


def test_a_run_through_named_connections_is_byte_identical_to_the_full_config(
    tmp_path: Path, site: Recorder, monkeypatch: pytest.MonkeyPatch
):
    for name in ("EMBEDDING_API_KEY", "RERANK_API_KEY", "DOCS_AUTH"):
        monkeypatch.setenv(name, CANARIES[name])
    docs = write_tree(tmp_path / "root" / "docs", SAMPLE_DOCS)
    store = tmp_path / "store"
    host = f"127.0.0.1:{site.port}"
    sources = [
        {"type": "folder", "path": str(docs), "glob": "**/*.md"},
        {"type": "url", "url": f"{site.url}/guide"},
    ]
    full = {
        "connect": {
            "sources": sources,
            "allowed_private_hosts": [host],
            "headers_env": {"Authorization": "DOCS_AUTH"},
            "headers_env_hosts": [host],
        },
        "normalize": {"chunk_strategy": "by_heading"},
        "index": {
            "embedding_model": "openai:test-embed",
            "base_url": f"{site.url}/v1",
            "api_key_env": "EMBEDDING_API_KEY",
            "vector_db": {"provider": "local", "collection": "docs", "connection": {"path": str(store)}},
        },
        "serve": {
            "retrieval": {
                "reranker": {"enabled": True, "model": f"http:{site.url}/rerank", "api_key_env": "RERANK_API_KEY"}
            }
        },
    }
    operator = api.pipeline_run(full, runs_dir=tmp_path / "operator")
    assert operator.status == "completed"
    shutil.rmtree(store)  # the agent's run writes a fresh store too
    connections = {
        "embeddings": {
            "team": {"model": "openai:test-embed", "base_url": f"{site.url}/v1", "api_key_env": "EMBEDDING_API_KEY"}
        },
        "stores": {"vectors": {"provider": "local", "path": str(store)}},
        "rerankers": {"rerank": {"model": f"http:{site.url}/rerank", "api_key_env": "RERANK_API_KEY"}},
        "fetch": {"intranet": {"allowed_private_hosts": [host], "headers_env": {"Authorization": "DOCS_AUTH"}}},
    }
    server = agent_server(tmp_path / "agent", [tmp_path / "root"], connections)
    named = {
        "connect": {"sources": [{**sources[0], "path": "docs"}, sources[1]], "fetch": "intranet"},
        "normalize": {"chunk_strategy": "by_heading"},
        "index": {"embedding_connection": "team", "connection": "vectors", "vector_db": {"collection": "docs"}},
        "serve": {"retrieval": {"reranker": {"enabled": True, "connection": "rerank"}}},
    }
    (result,) = call(server, ("indexfoundry_pipeline_run", named))
    assert structured(result).get("status") == "completed", structured(result)
    a = tmp_path / "operator" / operator.run_id
    b = tmp_path / "agent" / structured(result)["run_id"]
    assert json.loads((a / "config.json").read_text()) == json.loads((b / "config.json").read_text())
    files_a, files_b = content_files(a), content_files(b)
    assert sorted(files_a) == sorted(files_b)
    for name in files_a:
        assert files_a[name] == files_b[name], f"{name} differs"
    assert manifest_without_timing(a) == manifest_without_timing(b)
