"""What a run may fetch, by name: the fetch policy of a run and the URL check applied on every hop.

A URL is fetched only when it is ``http``/``https``, its host is not in ``blocked_domains`` and
it is inside every non-empty ``allowed_domains`` list (the run's, the global config's, a tool
call's). The policy also says which private hosts may be reached (the address check at connect
time is ``guard.py``'s) and which headers go where: headers read from the environment
(``headers_env``) go only to ``headers_env_hosts`` when the config names them.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import httpx

from indexfoundry.errors import ConfigInvalid, DomainBlocked
from indexfoundry.models.config import ConnectConfig, GlobalConfig, NetworkBounds, names_private_host
from indexfoundry.models.connections import FetchGrant

Resolver = Callable[[str, int], list[str]]


def env_headers(names: Mapping[str, str]) -> dict[str, str]:
    """The values of ``connect.headers_env`` ({header: ENV_VAR}) read now, never stored."""
    values: dict[str, str] = {}
    for header, env in names.items():
        value = os.environ.get(env)
        if not value:
            raise ConfigInvalid(
                f"connect.headers_env.{header}: the environment variable {env} is not set or empty",
                suggestion=f"export {env}=... (the header's value), or remove the header",
            )
        values[header] = value
    return values


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order, without duplicates."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def host_matches(host: str, pattern: str) -> bool:
    """``host`` is ``pattern`` or a subdomain of it (``*.`` prefixes are accepted)."""
    host = host.lower().rstrip(".")
    pattern = pattern.strip().lower().rstrip(".").removeprefix("*.")
    if pattern.startswith("[") and pattern.endswith("]"):
        pattern = pattern[1:-1]
    return bool(pattern) and (host == pattern or host.endswith("." + pattern))


def _split_host_port(entry: str) -> tuple[str, int | None]:
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, int(port) if port.isdigit() else None
    return entry, None


@dataclass(frozen=True)
class FetchPolicy:
    """Everything that decides what may be fetched and how (built from the run's config)."""

    user_agent: str = "IndexFoundry/1.0"
    headers: Mapping[str, str] = field(default_factory=dict)
    # Headers read from the environment (``headers_env``): sent only to ``secret_hosts`` when it is
    # not empty (``'name'`` or ``'name:port'``, matched exactly), and never on a cross-origin hop.
    secret_headers: Mapping[str, str] = field(default_factory=dict)
    secret_hosts: tuple[str, ...] = ()
    timeout_s: float = 30.0
    max_bytes: int = 50 * 1024 * 1024
    # Each non-empty list must contain the host (run config and tool arguments both restrict).
    allowed_domains: tuple[tuple[str, ...], ...] = ()
    blocked_domains: tuple[str, ...] = ()
    allow_private_networks: bool = False
    allowed_private_hosts: tuple[str, ...] = ()
    max_retries: int = 3
    backoff_s: float = 0.5
    max_redirects: int = 10
    concurrency: int = 3
    resolver: Resolver = system_resolver

    @classmethod
    def from_config(cls, connect: ConnectConfig, global_config: GlobalConfig | None = None) -> FetchPolicy:
        """The policy of a run: its connect config, bounded by the global security settings."""
        security = (global_config or GlobalConfig()).security
        allowed = tuple(t for t in (tuple(connect.allowed_domains), tuple(security.allowed_domains)) if t)
        return cls(
            user_agent=connect.user_agent,
            headers=dict(connect.headers),
            secret_headers=env_headers(connect.headers_env),
            secret_hosts=tuple(connect.headers_env_hosts),
            timeout_s=connect.timeout_ms / 1000,
            max_bytes=int(connect.max_file_size_mb * 1024 * 1024),
            allowed_domains=allowed,
            blocked_domains=tuple(connect.blocked_domains),
            allow_private_networks=connect.allow_private_networks,
            allowed_private_hosts=tuple(connect.allowed_private_hosts),
            max_retries=connect.max_retries,
            backoff_s=connect.retry_backoff_ms / 1000,
            max_redirects=connect.max_redirects,
            concurrency=max(1, min(connect.concurrency, security.max_concurrent_fetches)),
        )

    def bounded(self, bounds: NetworkBounds | None) -> FetchPolicy:
        """This policy narrowed to ``bounds`` (private networks both allow; never wider).

        ``bounds`` are an agent's: the run's own ``headers_env`` is dropped, and only the headers
        of the fetch connection the call named (a :class:`FetchGrant`) are sent, to its hosts only.
        """
        if bounds is None:
            return self

        def permitted(entry: str) -> bool:
            if bounds.allow_private_networks:
                return True
            name, port = _split_host_port(entry)
            for allowed in bounds.allowed_private_hosts:
                a_name, a_port = _split_host_port(allowed)
                if a_name == name and (a_port is None or a_port == port):
                    return True
            return False

        offered = [*self.allowed_private_hosts]
        if self.allow_private_networks:
            offered.extend(bounds.allowed_private_hosts)  # the run allows all: the bounds' hosts remain
        hosts = tuple(dict.fromkeys(h for h in offered if permitted(h)))
        grant = bounds if isinstance(bounds, FetchGrant) and bounds.headers_env else None
        return replace(
            self,
            allow_private_networks=self.allow_private_networks and bounds.allow_private_networks,
            allowed_private_hosts=hosts,
            secret_headers=env_headers(grant.headers_env) if grant is not None else {},
            secret_hosts=tuple(grant.headers_env_hosts) if grant is not None else (),
        )

    def secrets_for(self, url: httpx.URL) -> Mapping[str, str]:
        """The secret headers a request to ``url`` carries: all of them, or none off ``secret_hosts``."""
        if not self.secret_headers or not self.secret_hosts:
            return self.secret_headers
        host = (url.host or "").lower().rstrip(".")
        port = url.port or (443 if url.scheme == "https" else 80)
        for entry in self.secret_hosts:
            name, entry_port = _split_host_port(entry)
            if name.rstrip(".") == host and entry_port in (None, port):
                return self.secret_headers
        return {}

    def private_allowed(self, host: str, port: int) -> bool:
        """May ``host:port`` be reached on a loopback/private address?"""
        if self.allow_private_networks:
            return True
        host = host.lower().rstrip(".")
        for entry in self.allowed_private_hosts:
            name, entry_port = _split_host_port(entry)
            if name == host and entry_port in (None, port):
                return True
        return False


def _unblock_suggestion(url: httpx.URL, pattern: str) -> str:
    """The way out of a blocked host: a loopback or private host (blocked by default, the global
    config's ``security.blocked_domains``) is let through by ``allowed_private_hosts``; any other
    entry was written in a blocked_domains list."""
    if names_private_host(pattern):
        port = url.port or (443 if url.scheme == "https" else 80)
        host = f"[{url.host}]" if ":" in url.host else url.host
        return (
            f"Loopback and private hosts are not fetched by default: add '{host}:{port}' to "
            "connect.allowed_private_hosts in the pipeline config (or set connect.allow_private_networks: true)"
        )
    return "Remove the entry from connect.blocked_domains (or the global config's security.blocked_domains)"


def check_url(url: str | httpx.URL, policy: FetchPolicy) -> httpx.URL:
    """Parse ``url`` and apply the name rules; ``DOMAIN_BLOCKED`` says what and why."""
    text = str(url)
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise DomainBlocked(
            f"'{text}' is not a valid URL: {exc}",
            suggestion="Pass an absolute http(s) URL",
            details={"url": text, "reason": "invalid_url"},
        ) from None
    if parsed.scheme not in ("http", "https"):
        raise DomainBlocked(
            f"refusing to fetch {text}: scheme '{parsed.scheme}' is not http or https",
            suggestion="Only http:// and https:// URLs can be fetched; use a folder source for local files",
            details={"url": text, "reason": "scheme", "scheme": parsed.scheme},
        )
    host = parsed.host
    if not host:
        raise DomainBlocked(
            f"refusing to fetch {text}: no host",
            suggestion="Pass an absolute http(s) URL",
            details={"url": text, "reason": "invalid_url"},
        )
    for pattern in policy.blocked_domains:
        if host_matches(host, pattern):
            raise DomainBlocked(
                f"refusing to fetch {text}: host '{host}' is in blocked_domains ('{pattern}')",
                suggestion=_unblock_suggestion(parsed, pattern),
                details={"url": text, "host": host, "reason": "blocked_domains", "matched": pattern},
            )
    for allowlist in policy.allowed_domains:
        if not any(host_matches(host, pattern) for pattern in allowlist):
            raise DomainBlocked(
                f"refusing to fetch {text}: host '{host}' is not in allowed_domains {list(allowlist)}",
                suggestion="Add the domain to allowed_domains",
                details={"url": text, "host": host, "reason": "not_allowed", "allowed_domains": list(allowlist)},
            )
    return parsed
