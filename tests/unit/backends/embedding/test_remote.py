"""API embedders: their model ids (no network)."""

from __future__ import annotations

from indexfoundry.backends.embedding.remote import api_model_id


def test_model_ids_name_model_dimensions_and_server_without_credentials():
    assert api_model_id("openai", "text-embedding-3-small", None, None) == "openai:text-embedding-3-small"
    assert (
        api_model_id("openai", "nomic", 256, "http://user:pw@127.0.0.1:11434/v1/?x=1")
        == "openai:nomic;dims=256;base=127.0.0.1:11434/v1"
    )
