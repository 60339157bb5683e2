"""The SSRF guard and retry rules, without a network: name rules, address rules, policy building."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpcore
import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import ConnectConfig, GlobalConfig, SecurityConfig, parse_pipeline_config
from indexfoundry.phases.connect.net import (
    FetchPolicy,
    GuardedBackend,
    address_category,
    check_url,
    host_matches,
    parse_retry_after,
)


def policy(**kwargs: Any) -> FetchPolicy:
    return FetchPolicy(**kwargs)


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.10", "private"),
        ("172.16.5.4", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("100.64.0.1", "non-global"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_address_category_names_every_non_public_range(address: str, category: str | None):
    assert address_category(address) == category


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


def resolver(table: dict[str, list[str]]) -> Any:
    def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


def test_a_name_resolving_to_a_private_address_is_refused_before_connecting():
    backend = GuardedBackend(policy(resolver=resolver({"intranet.example": ["93.184.216.34", "10.0.0.7"]})))
    with pytest.raises(IndexFoundryError) as caught:
        backend.connect_tcp("intranet.example", 443)
    assert caught.value.code == "DOMAIN_BLOCKED"
    assert caught.value.details == {
        "host": "intranet.example",
        "port": 443,
        "address": "10.0.0.7",
        "reason": "private_address",
        "category": "private",
    }


def test_allowed_private_hosts_open_one_host_and_port_only():
    table = resolver({"docs.internal": ["10.0.0.5"], "other.internal": ["10.0.0.6"]})
    guard = GuardedBackend(policy(allowed_private_hosts=("docs.internal:8080",), resolver=table))
    assert guard.checked_addresses("docs.internal", 8080) == ["10.0.0.5"]
    for host, port in (("docs.internal", 9090), ("other.internal", 8080)):
        with pytest.raises(IndexFoundryError):
            guard.checked_addresses(host, port)
    assert GuardedBackend(policy(allow_private_networks=True, resolver=table)).checked_addresses("other.internal", 1)


def test_an_unresolvable_host_is_a_connection_error_that_httpx_retries():
    def fail(host: str, port: int) -> list[str]:
        raise OSError("no such host")

    with pytest.raises(httpcore.ConnectError):
        GuardedBackend(policy(resolver=fail)).checked_addresses("nowhere.invalid", 80)


def test_retry_after_accepts_seconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_policy_takes_the_tighter_of_run_concurrency_and_global_max_concurrent_fetches():
    connect = ConnectConfig.model_validate(
        {"sources": [{"type": "url", "url": "http://x"}], "concurrency": 8, "allowed_domains": ["a.org"]}
    )
    glob = GlobalConfig(security=SecurityConfig(max_concurrent_fetches=2, allowed_domains=["b.org"]))
    built = FetchPolicy.from_config(connect, glob)
    assert built.concurrency == 2
    assert built.allowed_domains == (("a.org",), ("b.org",))


def test_opting_into_private_networks_drops_only_the_inherited_loopback_blocks():
    source = {"type": "url", "url": "http://127.0.0.1/"}
    default = parse_pipeline_config({"connect": {"sources": [source]}})
    assert default.connect.blocked_domains == ["localhost", "127.0.0.1"]
    opted = parse_pipeline_config({"connect": {"sources": [source], "allow_private_networks": True}})
    assert opted.connect.blocked_domains == []
    one_host = parse_pipeline_config({"connect": {"sources": [source], "allowed_private_hosts": ["127.0.0.1:8765"]}})
    assert one_host.connect.blocked_domains == ["localhost"]
    explicit = parse_pipeline_config(
        {"connect": {"sources": [source], "allow_private_networks": True, "blocked_domains": ["localhost"]}}
    )
    assert explicit.connect.blocked_domains == ["localhost"]
