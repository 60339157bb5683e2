"""The connections file: every value parsed once when it is loaded, and refused with its key when wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.connections import load_connections
from indexfoundry.models.values import canonical_url, parse_dsn


def _load(tmp_path: Path, data: dict[str, Any]) -> Any:
    path = tmp_path / "connections.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_connections(path)


def _refused(tmp_path: Path, data: dict[str, Any]) -> str:
    with pytest.raises(IndexFoundryError) as info:
        _load(tmp_path, data)
    assert info.value.code == "CONFIG_INVALID"
    return info.value.message


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        (" HTTP://LocalHost:80/v1/ ", "http://localhost/v1/"),
        ("http://127.0.0.1:8080/v1/../../x", "http://127.0.0.1:8080/x"),
        ("http://127.0.0.1:8080/v1/%2e%2e/%2E%2E/x", "http://127.0.0.1:8080/x"),
        ("https://api.example.com:443/./v1/%7Euser", "https://api.example.com/v1/~user"),
        ("http://[::1]:9/a", "http://[::1]:9/a"),
    ],
)
def test_a_url_is_read_once_into_its_canonical_form(written: str, canonical: str):
    assert canonical_url(written) == canonical


@pytest.mark.parametrize("bad", ["ftp://x/", "file:///etc", "x", "http:///x", "http://user:pw@host/", "//host/x"])
def test_only_absolute_http_urls_without_credentials_are_urls(bad: str):
    with pytest.raises(ValueError):
        canonical_url(bad)


def test_a_dsn_is_read_by_libpq_query_parameters_included():
    params = parse_dsn("postgresql://app@127.0.0.1:5432/db?port=6000&host=/tmp&passfile=/x")
    assert (params["host"], params["port"], params["passfile"], params["user"]) == ("/tmp", "6000", "/x", "app")
    assert parse_dsn("host=db port=5 dbname=x")["port"] == "5"
    for bad in ("postgresql://app:secret@h/db", "host=h password=secret", "host=h port"):
        with pytest.raises(IndexFoundryError) as info:
            parse_dsn(bad)
        assert "secret" not in info.value.message


def test_each_connection_resolves_to_the_keys_an_operator_writes(tmp_path: Path):
    conns = _load(
        tmp_path,
        {
            "embeddings": {
                "e": {"model": " openai:text-embedding-3-small", "base_url": "http://h:1/v1/./", "dimensions": 8}
            },
            "stores": {
                "pg": {"provider": "pgvector", "dsn_env": "PG_DSN", "schema": "s"},
                "files": {"provider": "local", "path": "vectors"},
                "q": {"provider": "qdrant", "url": "HTTP://Q:6333/", "api_key_env": "QDRANT_KEY"},
            },
            "rerankers": {"r": {"model": " http:http://h:2/a/../rerank", "api_key_env": "RERANK_API_KEY"}},
            "fetch": {"f": {"allowed_private_hosts": ["Docs.Internal:8080"], "headers_env": {"Authorization": "DOCS"}}},
        },
    )
    assert conns.embeddings["e"].index_keys() == {
        "embedding_model": "openai:text-embedding-3-small",
        "base_url": "http://h:1/v1/",
        "dimensions": 8,
    }
    assert conns.stores["pg"].vector_db_keys() == {
        "provider": "pgvector",
        "connection": {"dsn_env": "PG_DSN", "schema": "s"},
    }
    assert conns.stores["files"].vector_db_keys()["connection"] == {"path": str((tmp_path / "vectors").resolve())}
    assert conns.stores["q"].vector_db_keys()["connection"]["url"] == "http://q:6333/"
    assert conns.rerankers["r"].reranker_keys() == {"model": "http:http://h:2/rerank", "api_key_env": "RERANK_API_KEY"}
    assert conns.fetch["f"].header_hosts == ["docs.internal:8080"]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"stores": {"x": {"provider": "chroma", "dsn": "host=h"}}}, "takes no dsn"),
        ({"stores": {"x": {"provider": "pgvector", "dsn": "postgresql://u:pw@h/db"}}}, "password"),
        ({"stores": {"x": {"provider": "pgvector", "dsn": "host=h", "dsn_env": "D"}}}, "not both"),
        ({"stores": {"x": {"provider": "qdrant", "api_key_env": "not a name"}}}, "api_key_env"),
        ({"embeddings": {"x": {"model": "nonsense:thing"}}}, "unknown embedding provider"),
        ({"embeddings": {"x": {"model": "openai:m", "base_url": "ftp://h/"}}}, "http"),
        ({"rerankers": {"x": {"model": "magic:thing"}}}, "cross-encoder"),
        ({"fetch": {"x": {"headers_env": {"Authorization": "TOKEN"}}}}, "needs the hosts"),
        ({"stores": {"Bad Name": {"provider": "local"}}}, "Bad Name"),
        ({"stores": {"x": {"provider": "local", "endpoint": "http://h"}}}, "endpoint"),
        ({"bogus": {}}, "bogus"),
    ],
)
def test_a_wrong_connection_is_refused_when_the_file_is_loaded(tmp_path: Path, data: dict[str, Any], says: str):
    assert says in _refused(tmp_path, data)


def test_a_missing_or_broken_file_is_config_invalid(tmp_path: Path):
    for path in (tmp_path / "absent.yaml",):
        with pytest.raises(IndexFoundryError) as info:
            load_connections(path)
        assert info.value.code == "CONFIG_INVALID"
    broken = tmp_path / "broken.yaml"
    broken.write_text("stores: [unclosed", encoding="utf-8")
    with pytest.raises(IndexFoundryError) as info:
        load_connections(broken)
    assert info.value.code == "CONFIG_INVALID"


def _yaml_blocks(path: Path, marker: str) -> list[str]:
    import re

    text = path.read_text(encoding="utf-8")
    return [block for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S) if marker in block]


def test_the_documented_connections_files_load(tmp_path: Path):
    repo = Path(__file__).resolve().parents[3]
    blocks = [
        *_yaml_blocks(repo / "docs" / "mcp.md", "# connections.yaml"),
        *_yaml_blocks(repo / "README.md", "# connections.yaml"),
    ]
    assert len(blocks) == 2
    for block in blocks:
        path = tmp_path / "connections.yaml"
        path.write_text(block, encoding="utf-8")
        conns = load_connections(path)
        assert conns.stores and conns.embeddings and conns.fetch
    providers = {s.provider for s in load_connections(path.with_name("connections.yaml")).stores.values()}
    assert providers == {"pgvector"}  # the README's; the docs' block names every provider:
    path.write_text(blocks[0], encoding="utf-8")
    docs = load_connections(path)
    assert {s.provider for s in docs.stores.values()} == {
        "chroma",
        "local",
        "qdrant",
        "milvus",
        "pgvector",
        "pinecone",
        "weaviate",
    }
    assert {e.model.split(":")[0] for e in docs.embeddings.values()} == {
        "openai",
        "cohere",
        "sentence-transformers",
        "local-int8",
        "hash",
    }
    assert {r.model.split(":")[0] for r in docs.rerankers.values()} == {"http", "cohere", "cross-encoder"}
