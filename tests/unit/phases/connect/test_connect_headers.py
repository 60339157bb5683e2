"""Credentials in request headers come from the environment, never from (or into) a config file."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import ConnectConfig, parse_pipeline_config
from indexfoundry.phases.connect.net import FetchPolicy

SOURCES = [{"type": "url", "url": "https://example.org/"}]


@pytest.mark.parametrize("name", ["Authorization", "Cookie", "X-Api-Key", "X-Auth-Token", "Proxy-Authorization"])
def test_a_secret_looking_header_written_in_the_config_is_refused(name: str):
    with pytest.raises(IndexFoundryError) as info:
        parse_pipeline_config({"connect": {"sources": SOURCES, "headers": {name: "Bearer s3cret"}}})
    assert info.value.code == "CONFIG_INVALID"


def test_headers_env_values_are_read_at_fetch_time(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DOCS_AUTH", "Bearer from-env")
    connect = ConnectConfig.model_validate(
        {"sources": SOURCES, "headers": {"Accept-Language": "en"}, "headers_env": {"Authorization": "DOCS_AUTH"}}
    )
    policy = FetchPolicy.from_config(connect)
    assert policy.headers == {"Accept-Language": "en"}
    assert policy.secret_headers == {"Authorization": "Bearer from-env"}
    assert policy.secrets_for(httpx.URL("https://anywhere.example/")) == {"Authorization": "Bearer from-env"}


def test_headers_env_goes_only_to_headers_env_hosts_when_the_config_names_them(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DOCS_AUTH", "Bearer from-env")
    connect = ConnectConfig.model_validate(
        {
            "sources": SOURCES,
            "headers_env": {"Authorization": "DOCS_AUTH"},
            "headers_env_hosts": ["docs.internal:8080", "example.org"],
        }
    )
    policy = FetchPolicy.from_config(connect)
    for url in ("http://docs.internal:8080/a", "https://example.org/x", "http://EXAMPLE.org./y"):
        assert policy.secrets_for(httpx.URL(url)) == {"Authorization": "Bearer from-env"}, url
    for url in ("http://docs.internal:8081/a", "http://docs.internal/a", "https://sub.example.org/", "http://x.test/"):
        assert policy.secrets_for(httpx.URL(url)) == {}, url


def test_a_headers_env_variable_that_is_not_set_fails_before_a_run_exists(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("DOCS_AUTH_MISSING", raising=False)
    config = {
        "connect": {"sources": SOURCES, "headers_env": {"Authorization": "DOCS_AUTH_MISSING"}},
        "index": {"embedding_model": "hash"},
    }
    runs = tmp_path / "runs"
    with pytest.raises(IndexFoundryError) as info:
        api.pipeline_run(config, runs_dir=runs)
    assert info.value.code == "CONFIG_INVALID"
    assert not runs.exists() or not any(runs.iterdir())


def test_the_header_value_never_reaches_the_frozen_config(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("DOCS_AUTH", "Bearer canary-4242")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n" + "words " * 60, encoding="utf-8")
    config = {
        "connect": {"sources": [{"type": "folder", "path": str(docs)}], "headers_env": {"Authorization": "DOCS_AUTH"}},
        "extract": {"workers": 0},
        "index": {"embedding_model": "hash"},
    }
    result = api.pipeline_run(config, runs_dir=tmp_path / "runs")
    frozen = (tmp_path / "runs" / result.run_id / "config.json").read_text(encoding="utf-8")
    assert "canary-4242" not in frozen
    assert json.loads(frozen)["connect"]["headers_env"] == {"Authorization": "DOCS_AUTH"}
