"""What every API backend (the OpenAI/Cohere embedders, the Cohere/HTTP rerankers) shares.

The retry loop with backoff and ``Retry-After``, the classification of a failed call, the key
read from an environment variable only when a request is made and redacted from every message,
and the Cohere client and error classes both Cohere backends use.
"""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

from indexfoundry.errors import ConfigInvalid, EmbedError, IndexFoundryError
from indexfoundry.models.config import RetryConfig

T = TypeVar("T")

_MAX_WAIT_S = 120.0


class Failure:
    """How one failed API call is reported and whether it is worth retrying."""

    def __init__(self, recoverable: bool, summary: str, retry_after: float | None = None) -> None:
        self.recoverable = recoverable
        self.summary = summary
        self.retry_after = retry_after


def retry_after(headers: Any) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms``, ``Retry-After`` seconds or date)."""
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def call_with_retries(
    call: Callable[[], T],
    classify: Callable[[Exception], Failure],
    retry: RetryConfig,
    what: str,
    redact: Callable[[str], str],
) -> T:
    """Run ``call``; retry recoverable failures (429, 5xx, timeouts) with exponential backoff.

    The wait is the server's ``Retry-After`` when it sends one, else ``backoff_ms`` doubled on
    each retry (capped at two minutes). tenacity runs the loop. A final failure is ``EMBED_ERROR``
    (the rerankers translate it to ``RERANK_ERROR``).
    """
    import tenacity

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        failure = classify(exc) if isinstance(exc, Exception) else None
        if failure is not None and failure.retry_after is not None:
            return min(failure.retry_after, _MAX_WAIT_S)
        return float(min(retry.backoff_ms / 1000 * 2 ** (state.attempt_number - 1), _MAX_WAIT_S))

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(retry.max_retries + 1),
        wait=wait,
        retry=tenacity.retry_if_exception(
            lambda e: isinstance(e, Exception) and not isinstance(e, IndexFoundryError) and classify(e).recoverable
        ),
        reraise=True,
    )
    attempts = 0
    try:
        for attempt in retrying:
            with attempt:
                attempts += 1
                return call()
    except IndexFoundryError:
        raise
    except Exception as exc:
        failure = classify(exc)
        raise EmbedError(
            redact(f"{what} failed after {attempts} attempt(s): {failure.summary}"),
            recoverable=failure.recoverable,
            suggestion=(
                "Retry later (or raise index.retry_config.max_retries); texts already embedded are cached"
                if failure.recoverable
                else "Check the model name, API key variable and base_url"
            ),
        ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def api_key(env_name: str, provider: str, required: bool) -> str | None:
    """The key in ``$env_name``; ``CONFIG_INVALID`` naming the variable when it is required and unset."""
    value = os.environ.get(env_name)
    if value:
        return value
    if required:
        raise ConfigInvalid(
            f"the {provider} provider needs an API key in the environment variable {env_name}, which is not set",
            suggestion=f"export {env_name}=... (or set index.api_key_env to the variable that holds it)",
        )
    return None


class KeyedBackend:
    """A backend holding the API key it read (``_key``): every message it raises is redacted."""

    _key: str | None = None

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text


def classify_httpx(exc: Exception) -> Failure:
    """An ``httpx`` failure: timeouts, connection errors and 408/429/5xx are worth retrying."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return Failure(True, "request timed out")
    if isinstance(exc, httpx.TransportError):
        return Failure(True, f"cannot connect to the server ({type(exc).__name__})")
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        recoverable = status in (408, 429) or status >= 500
        return Failure(recoverable, f"HTTP {status}", retry_after(exc.response.headers))
    return Failure(False, f"malformed response ({type(exc).__name__})")


def classify_cohere(exc: Exception) -> Failure:
    """A failure of the Cohere SDK (httpx underneath, ``ApiError`` for an HTTP status)."""
    from cohere.core.api_error import ApiError

    if isinstance(exc, ApiError):
        status = exc.status_code or 0
        recoverable = status in (408, 429) or status >= 500
        return Failure(recoverable, f"HTTP {status} ({type(exc).__name__})", retry_after(exc.headers))
    return classify_httpx(exc)


def cohere_client(key: str, base_url: str | None, timeout_s: float) -> Any:
    """Cohere's v2 client (the SDK's own retries are off per request: the retry loop is ours)."""
    import cohere

    kwargs: dict[str, Any] = {"api_key": key, "timeout": timeout_s}
    if base_url:
        kwargs["base_url"] = base_url
    return cohere.ClientV2(**kwargs)
