"""SSRF-safe HTTP fetching: one guarded httpx client shared by every remote source.

Two layers keep a fetch from reaching what it must not:

* **Names, on every hop.** Redirects are followed here, not by httpx, so each hop's URL is
  checked before it is requested: only ``http``/``https``, not in ``blocked_domains``, inside
  every non-empty ``allowed_domains`` list. Custom headers are dropped on a cross-origin hop;
  headers read from the environment (``headers_env``) go only to ``headers_env_hosts`` when the
  config names them.
* **Addresses, at connect time.** httpx connects through :class:`GuardedBackend`, which resolves
  the host itself, refuses loopback, private, link-local (169.254.169.254 …), multicast,
  unspecified and other non-global addresses unless private networks are allowed (for all hosts,
  or for the hosts in ``allowed_private_hosts``), and then connects to the checked address. The
  check happens on the very connection that is used, so neither a redirect nor DNS rebinding can
  slip past it. Proxies from the environment are ignored for the same reason.

Responses are streamed: the size limit is enforced while reading (a 10 GB body is cut at the
limit), bodies go to a temp file next to their final place, and only the first bytes are kept
in memory for content sniffing. Timeouts, connection errors, 429 and 5xx are retried with
exponential backoff, honouring ``Retry-After``; other 4xx are not retried.
"""

from __future__ import annotations

import contextlib
import email.utils
import ipaddress
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpcore
import httpx

from indexfoundry.errors import ConfigInvalid, DomainBlocked, FetchFailed, FetchTimeout, FileTooLarge, IndexFoundryError
from indexfoundry.models.config import ConnectConfig, GlobalConfig, NetworkBounds
from indexfoundry.models.connections import FetchGrant
from indexfoundry.storage.atomic import new_temp_file

Resolver = Callable[[str, int], list[str]]

HEAD_BYTES = 8192
CHUNK_BYTES = 1 << 16
# A whole response must arrive within this many times the (inactivity) timeout.
TOTAL_TIMEOUT_FACTOR = 10
# Longest Retry-After honoured; a server asking for more fails the fetch (recoverable).
MAX_RETRY_AFTER_S = 60.0
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


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
                suggestion="Remove the entry from connect.blocked_domains (or the global security.blocked_domains)",
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


class HttpStatusError(FetchFailed):
    """The server answered with an error status that retrying will not fix (4xx)."""

    def __init__(self, url: str, status: int) -> None:
        super().__init__(
            f"GET {url} answered HTTP {status}",
            recoverable=False,
            suggestion="Check the URL" if status in (404, 410) else "Check access to the URL",
            details={"url": url, "status": status},
        )
        self.status = status


@dataclass
class FetchResult:
    """A completed GET: 2xx with its body (in memory or in a temp file), or 304."""

    url: str
    final_url: str
    status: int
    headers: httpx.Headers
    redirects: list[str]
    attempts: int
    size: int = 0
    head: bytes = b""
    body: bytes | None = None
    body_path: Path | None = None

    @property
    def content_type(self) -> str | None:
        value: str | None = self.headers.get("content-type")
        return value

    def discard(self) -> None:
        """Remove the temp file of an unused body."""
        if self.body_path is not None:
            with contextlib.suppress(OSError):
                self.body_path.unlink()
            self.body_path = None


class _Retry(Exception):
    def __init__(self, error: IndexFoundryError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


class Fetcher:
    """A guarded, retrying, size-limited HTTP client (thread-safe; share one per run)."""

    def __init__(self, policy: FetchPolicy, sleep: Callable[[float], None] = time.sleep) -> None:
        self.policy = policy
        self._sleep = sleep
        self._client = httpx.Client(
            transport=GuardedTransport(policy),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(policy.timeout_s),
            headers={"User-Agent": policy.user_agent},
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        to_dir: Path | None = None,
        max_bytes: int | None = None,
    ) -> FetchResult:
        """GET ``url`` with retries; the body goes to a temp file in ``to_dir`` or to memory.

        Raises DOMAIN_BLOCKED, FETCH_TIMEOUT, FETCH_FAILED (``HttpStatusError`` for 4xx) or
        FILE_TOO_LARGE. A 304 is returned as a result without a body.
        """
        limit = self.policy.max_bytes if max_bytes is None else max_bytes
        attempt = 0
        while True:
            try:
                result = self._attempt(url, headers or {}, to_dir, limit)
                result.attempts = attempt + 1
                return result
            except _Retry as retry:
                if attempt >= self.policy.max_retries:
                    retry.error.details.setdefault("attempts", attempt + 1)
                    raise retry.error from None
                delay = self.policy.backoff_s * (2**attempt)
                if retry.retry_after is not None:
                    if retry.retry_after > MAX_RETRY_AFTER_S:
                        raise FetchFailed(
                            f"GET {url}: the server asks to retry after {retry.retry_after:.0f} s",
                            recoverable=True,
                            suggestion="Run again later",
                            details={"url": url, "retry_after_s": retry.retry_after, "attempts": attempt + 1},
                        ) from None
                    delay = retry.retry_after
                attempt += 1
                self._sleep(delay)

    def _attempt(self, url: str, headers: Mapping[str, str], to_dir: Path | None, limit: int) -> FetchResult:
        origin = check_url(url, self.policy)
        current = origin
        redirects: list[str] = []
        base_headers = {**self.policy.headers, **self.policy.secrets_for(origin), **headers}
        deadline = time.monotonic() + self.policy.timeout_s * TOTAL_TIMEOUT_FACTOR
        for _hop in range(self.policy.max_redirects + 1):
            hop_headers = base_headers if _same_origin(origin, current) else dict(headers)
            try:
                request = self._client.build_request("GET", current, headers=hop_headers)
                response = self._client.send(request, stream=True)
            except httpx.TimeoutException:
                raise _Retry(self._timeout(url)) from None
            except httpx.TransportError as exc:
                raise _Retry(self._failed(url, exc)) from None
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    target = current.join(location)
                    try:
                        check_url(target, self.policy)
                    except DomainBlocked as blocked:
                        blocked.details["redirect_chain"] = [url, *redirects, str(target)]
                        raise
                    redirects.append(str(target))
                    current = target
                    continue
                status = response.status_code
                if status == 304:
                    return FetchResult(url, str(current), 304, response.headers, redirects, 0)
                if status == 429 or status >= 500:
                    raise _Retry(
                        FetchFailed(
                            f"GET {url} answered HTTP {status}",
                            recoverable=True,
                            suggestion="The server is busy or failing; run again later",
                            details={"url": url, "status": status},
                        ),
                        parse_retry_after(response.headers.get("retry-after")),
                    )
                if status >= 400:
                    raise HttpStatusError(url, status)
                if status >= 300 or status < 200:
                    raise FetchFailed(
                        f"GET {url} answered HTTP {status} without a usable redirect",
                        suggestion="Check the URL",
                        details={"url": url, "status": status},
                    )
                return self._read_body(url, str(current), response, redirects, to_dir, limit, deadline)
            finally:
                response.close()
        raise FetchFailed(
            f"GET {url}: more than {self.policy.max_redirects} redirects",
            suggestion="Raise connect.max_redirects or fetch the final URL",
            details={"url": url, "redirect_chain": [url, *redirects]},
        )

    def _timeout(self, url: str) -> FetchTimeout:
        return FetchTimeout(
            f"GET {url} timed out after {self.policy.timeout_s:g} s",
            suggestion="Raise connect.timeout_ms, or check that the server responds",
            details={"url": url, "timeout_ms": int(self.policy.timeout_s * 1000)},
        )

    def _failed(self, url: str, exc: Exception) -> FetchFailed:
        return FetchFailed(
            f"GET {url} failed: {type(exc).__name__}: {exc}",
            suggestion="Check the URL and the network",
            details={"url": url, "error": type(exc).__name__},
        )

    def _too_large(self, url: str, limit: int, size: int | None) -> FileTooLarge:
        shown = f"{size / 1048576:.1f} MB" if size is not None else f"more than {limit / 1048576:g} MB"
        return FileTooLarge(
            f"GET {url}: the response is {shown}, over the {limit / 1048576:g} MB limit",
            suggestion="Raise connect.max_file_size_mb",
            details={"url": url, "limit_bytes": limit, **({"content_length": size} if size is not None else {})},
        )

    def _read_body(
        self,
        url: str,
        final_url: str,
        response: httpx.Response,
        redirects: list[str],
        to_dir: Path | None,
        limit: int,
        deadline: float,
    ) -> FetchResult:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and "content-encoding" not in response.headers and int(declared) > limit:
            raise self._too_large(url, limit, int(declared))
        size = 0
        head = bytearray()
        memory = bytearray()
        path: Path | None = None
        handle = None
        if to_dir is not None:
            to_dir.mkdir(parents=True, exist_ok=True)
            fd, path = new_temp_file(to_dir, "fetch")
            handle = os.fdopen(fd, "wb")
        try:
            # iter_bytes decodes any Content-Encoding, so the limit applies to the real bytes.
            for chunk in response.iter_bytes(CHUNK_BYTES):
                size += len(chunk)
                if size > limit:
                    raise self._too_large(url, limit, None)
                if time.monotonic() > deadline:
                    raise _Retry(self._timeout(url))
                if len(head) < HEAD_BYTES:
                    head.extend(chunk[: HEAD_BYTES - len(head)])
                if handle is not None:
                    handle.write(chunk)
                else:
                    memory.extend(chunk)
            if handle is not None:
                handle.flush()
                os.fsync(handle.fileno())
        except httpx.TimeoutException:
            self._drop(handle, path)
            raise _Retry(self._timeout(url)) from None
        except httpx.TransportError as exc:
            self._drop(handle, path)
            raise _Retry(self._failed(url, exc)) from None
        except httpx.DecodingError as exc:
            self._drop(handle, path)
            raise self._failed(url, exc) from None
        except BaseException:
            self._drop(handle, path)
            raise
        if handle is not None:
            handle.close()
        return FetchResult(
            url=url,
            final_url=final_url,
            status=response.status_code,
            headers=response.headers,
            redirects=redirects,
            attempts=0,
            size=size,
            head=bytes(head),
            body=None if path is not None else bytes(memory),
            body_path=path,
        )

    @staticmethod
    def _drop(handle: Any, path: Path | None) -> None:
        if handle is not None:
            handle.close()
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()
