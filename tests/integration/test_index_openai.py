"""The openai and cohere providers, with their official SDKs, against a real embeddings server
on 127.0.0.1 (tests/embedding_server.py) that computes hash embeddings."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from indexfoundry import api
from indexfoundry.backends.embedding.base import l2_normalize
from indexfoundry.backends.embedding.hashing import hash_embed
from indexfoundry.backends.embedding.providers import resolve_embedder
from indexfoundry.backends.embedding.remote import OpenAIEmbedder
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import IndexConfig, RetryConfig
from indexfoundry.phases.index import decode_vector
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.embedding_server import EmbeddingServer

SECRET = "sk-test-4f9a1c0d2e-never-logged"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer(dimensions=64).start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", SECRET)


def _config(docs: Path, server: EmbeddingServer, **index: object) -> dict[str, object]:
    return folder_config(
        docs,
        index={
            "embedding_model": "openai:test-embed",
            "base_url": server.base_url,
            "api_key_env": "TEST_EMBED_KEY",
            "batch_size": 2,
            "retry_config": {"max_retries": 2, "backoff_ms": 10},
            **index,
        },
    )


def _all_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file() and p.suffix != ".sqlite3")


def test_openai_provider_indexes_through_the_sdk_and_never_writes_the_key(tree, runs_dir: Path, server):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(_config(docs, server), runs_dir=runs_dir)
    assert out.status == "completed"
    layout = RunLayout(runs_dir / out.run_id)
    records = list(iter_jsonl(layout.embeddings))
    chunks = {c["chunk_id"]: c for c in iter_jsonl(layout.chunks)}
    assert records and all(r["dimensions"] == 64 for r in records)
    assert records[0]["model"] == f"openai:test-embed;base=127.0.0.1:{server.port}/v1"
    # The vectors are what the server computed for each chunk's embedding text.
    from indexfoundry.models.records import DocumentChunk

    for record in records:
        text = DocumentChunk.model_validate(chunks[record["chunk_id"]]).embedding_text()
        assert np.allclose(decode_vector(record["vector"]), l2_normalize(hash_embed([text], 64))[0], atol=1e-6)
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
    assert all(len(r.body["input"]) <= 2 for r in server.requests)  # batch_size
    assert SECRET not in _all_text(runs_dir)
    hits = api.search("change the theme colours", out.run_id, runs_dir=runs_dir)
    assert hits.results[0].source.uri == "docs/guide/theme.md"


def test_rerun_after_one_file_edit_embeds_only_that_files_changed_chunks(tree, runs_dir: Path, server):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(_config(docs, server), runs_dir=runs_dir)
    embedded_first = len(server.texts)
    (docs / "guide" / "install.md").write_text(
        "# Installation\n\n## Requirements\n\nPython 3.12 or newer is required to install the package.\n\n"
        "## Using pip\n\nRun pip install sample inside a virtual environment to install it.\n",
        encoding="utf-8",
    )
    second = api.pipeline_run(_config(docs, server), runs_dir=runs_dir)
    assert first.run_id != second.run_id
    new_texts = server.texts[embedded_first:]
    assert new_texts and all("3.12" in t or "pip install" in t or "Installation" in t for t in new_texts)
    assert not any("theme" in t.lower() for t in new_texts)


def test_a_429_with_retry_after_is_waited_out_and_retried(server):
    server.script = [("429", "1")]
    embedder = OpenAIEmbedder(
        "test-embed", base_url=server.base_url, api_key_env="TEST_EMBED_KEY", retry=RetryConfig(backoff_ms=10)
    )
    started = time.monotonic()
    vectors = embedder.embed(["alpha beta", "gamma"])
    assert time.monotonic() - started >= 1.0  # the server's Retry-After, not the 10 ms backoff
    assert vectors.shape == (2, 64)
    assert len(server.requests) == 2


def test_persistent_server_errors_give_a_recoverable_embed_error_naming_provider_model_and_batch(
    tree, runs_dir: Path, server
):
    server.script = [("503", None)] * 10
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(_config(docs, server, retry_config={"max_retries": 1, "backoff_ms": 1}), runs_dir=runs_dir)
    assert out.status == "failed"
    errors = out.phases["index"].errors
    assert errors
    manifest = RunLayout(runs_dir / out.run_id).manifest.read_text()
    assert "EMBED_ERROR" in manifest
    embedder = resolve_embedder(
        "openai:test-embed",
        IndexConfig(base_url=server.base_url, api_key_env="TEST_EMBED_KEY", retry_config=RetryConfig(max_retries=1)),
    )
    server.script = [("503", None)] * 4
    with pytest.raises(IndexFoundryError) as info:
        embedder.embed(["x"])
    assert info.value.code == "EMBED_ERROR"
    assert info.value.recoverable is True
    assert "openai" in info.value.message and "test-embed" in info.value.message
    assert SECRET not in info.value.message


def test_batch_failure_in_the_phase_names_the_batch(tmp_path: Path, server):
    from indexfoundry.phases.index.embedding import embed_with_cache

    server.script = [("malformed", None)]
    embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key_env="TEST_EMBED_KEY")
    with pytest.raises(IndexFoundryError) as info:
        embed_with_cache(tmp_path / "cache.sqlite", embedder, {"h1": "one", "h2": "two"}, batch_size=1)
    assert info.value.code == "EMBED_ERROR"
    assert info.value.recoverable is False  # a malformed answer is not retried
    assert info.value.details["batch"] == 1
    assert "batch 1/2" in info.value.message


def test_missing_api_key_variable_is_a_config_error_for_the_hosted_api(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    embedder = OpenAIEmbedder("text-embedding-3-small", api_key_env="NOT_SET_KEY")
    with pytest.raises(IndexFoundryError) as info:
        embedder.embed(["x"])
    assert info.value.code == "CONFIG_INVALID"


def test_dimensions_are_passed_to_the_server_and_recorded_in_the_model_id(server):
    embedder = resolve_embedder(
        "openai:test-embed", IndexConfig(base_url=server.base_url, api_key_env="TEST_EMBED_KEY", dimensions=16)
    )
    assert embedder.embed(["one two"]).shape == (1, 16)
    assert server.requests[0].body["dimensions"] == 16
    assert ";dims=16" in embedder.model_id


def test_cohere_provider_embeds_documents_and_queries_with_their_input_types(tree, runs_dir: Path, server):
    docs = tree(SAMPLE_DOCS)
    config = folder_config(
        docs,
        index={"embedding_model": "cohere:embed-test", "base_url": server.cohere_url, "api_key_env": "TEST_EMBED_KEY"},
    )
    out = api.pipeline_run(config, runs_dir=runs_dir)
    assert out.status == "completed"
    assert {r.body["input_type"] for r in server.requests} == {"search_document"}
    assert all(r.path == "/v2/embed" for r in server.requests)
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
    from indexfoundry.backends.embedding.base import embed_queries

    embedder = resolve_embedder(
        "cohere:embed-test", IndexConfig(base_url=server.cohere_url, api_key_env="TEST_EMBED_KEY")
    )
    embed_queries(embedder, ["theme"])
    assert server.requests[-1].body["input_type"] == "search_query"
    assert SECRET not in _all_text(runs_dir)
