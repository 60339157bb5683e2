"""SSRF-safe HTTP fetching: one guarded httpx client shared by every remote source.

Two layers keep a fetch from reaching what it must not:

* **Names, on every hop** (``policy.py``). Redirects are followed here, not by httpx, so each
  hop's URL is checked (``check_url``) before it is requested: only ``http``/``https``, not in
  ``blocked_domains``, inside every non-empty ``allowed_domains`` list. Custom headers are
  dropped on a cross-origin hop; headers read from the environment (``headers_env``) go only to
  ``headers_env_hosts`` when the config names them.
* **Addresses, at connect time** (``guard.py``). httpx connects through ``GuardedBackend``,
  which resolves the host itself and refuses loopback, private, link-local and other non-global
  addresses unless the policy allows them, on the very connection that is used.

Responses are streamed: the size limit is enforced while reading (a 10 GB body is cut at the
limit), bodies go to a temp file next to their final place, and only the first bytes are kept
in memory for content sniffing. Timeouts, connection errors, 429 and 5xx are retried with
exponential backoff, honouring ``Retry-After``; other 4xx are not retried.
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from indexfoundry.errors import DomainBlocked, FetchFailed, FetchTimeout, FileTooLarge, IndexFoundryError
from indexfoundry.phases.connect.guard import GuardedBackend, GuardedTransport, address_category
from indexfoundry.phases.connect.policy import (
    FetchPolicy,
    Resolver,
    check_url,
    env_headers,
    host_matches,
    system_resolver,
)
from indexfoundry.storage.atomic import new_temp_file

# The policy and the guard are imported from here too: this module is the face of the network.
__all__ = [
    "FetchPolicy",
    "FetchResult",
    "Fetcher",
    "GuardedBackend",
    "GuardedTransport",
    "HttpStatusError",
    "Resolver",
    "address_category",
    "check_url",
    "env_headers",
    "host_matches",
    "parse_retry_after",
    "system_resolver",
]

HEAD_BYTES = 8192
CHUNK_BYTES = 1 << 16
# A whole response must arrive within this many times the (inactivity) timeout.
TOTAL_TIMEOUT_FACTOR = 10
# Longest Retry-After honoured; a server asking for more fails the fetch (recoverable).
MAX_RETRY_AFTER_S = 60.0
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


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
