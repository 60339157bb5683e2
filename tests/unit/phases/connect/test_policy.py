"""The fetch policy without a network: URL and domain rules, concurrency, and credentials in
request headers, which come from the environment, never from (or into) a config file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import ConnectConfig, GlobalConfig, SecurityConfig
from indexfoundry.phases.connect.policy import FetchPolicy, check_url, host_matches

SOURCES = [{"type": "url", "url": "https://example.org/"}]


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


def policy(**kwargs: Any) -> FetchPolicy:
    return FetchPolicy(**kwargs)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "gopher://example.org/", "ftp://example.org/x", "data:text/plain,hi"]
)
def test_non_http_schemes_are_domain_blocked(url: str):
    with pytest.raises(IndexFoundryError) as caught:
        check_url(url, policy())
    assert caught.value.code == "DOMAIN_BLOCKED" and caught.value.details["reason"] in ("scheme", "invalid_url")


def test_blocked_domains_cover_subdomains_and_allowlists_must_all_agree():
    blocked = policy(blocked_domains=("example.org",))
    for url in ("http://example.org/", "https://docs.EXAMPLE.org./a"):
        with pytest.raises(IndexFoundryError) as caught:
            check_url(url, blocked)
        assert caught.value.details["reason"] == "blocked_domains"
    assert check_url("http://notexample.org/", blocked).host == "notexample.org"
    both = policy(allowed_domains=(("example.org", "example.com"), ("*.example.org",)))
    assert check_url("https://docs.example.org/", both).host == "docs.example.org"
    with pytest.raises(IndexFoundryError) as caught:
        check_url("https://example.com/", both)  # in the run's allowlist, not in the tool's
    assert caught.value.details["reason"] == "not_allowed"


def test_host_matches_is_exact_or_a_subdomain_never_a_suffix():
    assert host_matches("a.b.example.org", "example.org")
    assert not host_matches("badexample.org", "example.org")
    assert host_matches("::1", "[::1]")


def test_policy_takes_the_tighter_of_run_concurrency_and_global_max_concurrent_fetches():
    connect = ConnectConfig.model_validate(
        {"sources": [{"type": "url", "url": "http://x"}], "concurrency": 8, "allowed_domains": ["a.org"]}
    )
    glob = GlobalConfig(security=SecurityConfig(max_concurrent_fetches=2, allowed_domains=["b.org"]))
    built = FetchPolicy.from_config(connect, glob)
    assert built.concurrency == 2
    assert built.allowed_domains == (("a.org",), ("b.org",))
