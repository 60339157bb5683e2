"""The SSRF guard without a network: address rules, and names resolved before connecting."""

from __future__ import annotations

from typing import Any

import httpcore
import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.phases.connect.guard import GuardedBackend, address_category
from indexfoundry.phases.connect.policy import FetchPolicy


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
