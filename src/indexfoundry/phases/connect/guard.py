"""The address check at connect time: the SSRF guard every connection of a fetch goes through.

httpx connects through :class:`GuardedBackend`, which resolves the host itself, refuses
loopback, private, link-local (169.254.169.254 …), multicast, unspecified and other non-global
addresses unless the policy allows private networks (for all hosts, or for the hosts in
``allowed_private_hosts``), and then connects to the checked address. The check happens on the
very connection that is used, so neither a redirect nor DNS rebinding can slip past it. Proxies
from the environment are ignored for the same reason.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from indexfoundry.errors import DomainBlocked
from indexfoundry.phases.connect.policy import FetchPolicy


def address_category(address: str) -> str | None:
    """Why ``address`` is not a public internet address (``None`` when it is)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    )
    for name, flagged in checks:
        if flagged:
            return name
    return None if ip.is_global else "non-global"


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore network backend that resolves, checks and pins the address it connects to."""

    def __init__(self, policy: FetchPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.SyncBackend()

    def checked_addresses(self, host: str, port: int) -> list[str]:
        """The addresses of ``host``; all of them must be allowed (no mixing public and private)."""
        host = host.strip("[]")
        try:
            addresses = self._policy.resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        if not addresses:
            raise httpcore.ConnectError(f"cannot resolve {host}: no addresses")
        if not self._policy.private_allowed(host, port):
            for address in addresses:
                category = address_category(address)
                if category is not None:
                    raise DomainBlocked(
                        f"refusing to connect to {host}:{port}: it resolves to {address}, a {category} address",
                        suggestion=(
                            "Private, loopback and link-local addresses are blocked against SSRF; set "
                            "connect.allow_private_networks or list the host in connect.allowed_private_hosts"
                        ),
                        details={
                            "host": host,
                            "port": port,
                            "address": address,
                            "reason": "private_address",
                            "category": category,
                        },
                    )
        return addresses

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        options = list(socket_options or [])
        last: Exception | None = None
        for address in self.checked_addresses(host, port):
            try:
                return self._inner.connect_tcp(address, port, timeout, local_address, options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise DomainBlocked("unix sockets are never connected to", details={"reason": "unix_socket"})

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx transport whose every connection goes through :class:`GuardedBackend`."""

    def __init__(self, policy: FetchPolicy) -> None:
        limits = httpx.Limits(max_connections=policy.concurrency * 2, max_keepalive_connections=policy.concurrency)
        super().__init__(trust_env=False, limits=limits)
        # httpx has no public hook for httpcore's network backend, so the pool it built is
        # replaced by an identical one that connects through the guard.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy),
        )
