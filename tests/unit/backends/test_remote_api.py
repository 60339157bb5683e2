"""What every API backend shares (``backends/remote_api.py``): Retry-After, failure classes, the retry
loop, keys from the environment and their redaction. Failures are real httpx errors, from a real
server on 127.0.0.1 where a status matters (``tests/embedding_server.py``)."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from indexfoundry.backends.remote_api import (
    Failure,
    KeyedBackend,
    api_key,
    call_with_retries,
    classify_httpx,
    retry_after,
)
from indexfoundry.errors import IndexFoundryError, NotFound
from indexfoundry.models.config import RetryConfig
from tests.embedding_server import EmbeddingServer

NO_WAIT = RetryConfig(max_retries=3, backoff_ms=0)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    started = EmbeddingServer().start()
    try:
        yield started
    finally:
        started.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status_error(status: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/embeddings")
    response = httpx.Response(status, headers=headers, request=request)
    return httpx.HTTPStatusError(f"HTTP {status}", request=request, response=response)


def _embed(server: EmbeddingServer) -> Callable[[], int]:
    def call() -> int:
        response = httpx.post(f"{server.base_url}/embeddings", json={"input": ["a text"], "model": "m"}, timeout=10)
        response.raise_for_status()
        return len(response.json()["data"])

    return call


def test_retry_after_reads_milliseconds_seconds_and_http_dates_and_ignores_the_rest():
    assert retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert retry_after(httpx.Headers({"Retry-After": "7"})) == 7.0
    assert retry_after(httpx.Headers({"Retry-After": "-3"})) == 0.0
    soon = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 50 < (retry_after(httpx.Headers({"Retry-After": soon})) or 0) <= 60
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    assert retry_after(httpx.Headers({"Retry-After": past})) == 0.0
    for headers in (None, httpx.Headers({}), httpx.Headers({"Retry-After": "soon"}), {"retry-after-ms": "x"}):
        assert retry_after(headers) is None


@pytest.mark.parametrize(
    ("status", "recoverable"),
    [(400, False), (401, False), (404, False), (408, True), (429, True), (500, True), (503, True)],
)
def test_408_429_and_5xx_are_worth_retrying_and_other_statuses_are_not(status: int, recoverable: bool):
    failure = classify_httpx(_status_error(status, {"Retry-After": "2"}))
    assert failure.recoverable is recoverable
    assert failure.summary == f"HTTP {status}"
    assert failure.retry_after == 2.0


def test_timeouts_and_refused_connections_are_worth_retrying_and_a_malformed_answer_is_not():
    with pytest.raises(httpx.ConnectError) as refused:
        httpx.get(f"http://127.0.0.1:{_closed_port()}/", timeout=5)
    assert classify_httpx(refused.value).recoverable is True
    assert classify_httpx(httpx.ReadTimeout("slow")).recoverable is True
    malformed = classify_httpx(KeyError("data"))
    assert malformed.recoverable is False and "KeyError" in malformed.summary


def test_a_server_that_fails_then_recovers_is_retried_until_it_answers(server: EmbeddingServer):
    server.script = [("503", None), ("429", "0")]
    assert call_with_retries(_embed(server), classify_httpx, NO_WAIT, "embedding", str) == 1
    assert len(server.requests) == 3


def test_a_server_that_keeps_failing_is_a_recoverable_embed_error_after_every_retry(server: EmbeddingServer):
    server.script = [("503", None)] * 3
    with pytest.raises(IndexFoundryError) as error:
        call_with_retries(_embed(server), classify_httpx, RetryConfig(max_retries=2, backoff_ms=0), "embedding", str)
    assert error.value.code == "EMBED_ERROR" and error.value.recoverable is True
    assert "3 attempt(s)" in error.value.message and "HTTP 503" in error.value.message
    assert len(server.requests) == 3


def test_a_failure_not_worth_retrying_is_tried_once_and_is_not_recoverable():
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise _status_error(401)

    with pytest.raises(IndexFoundryError) as error:
        call_with_retries(call, classify_httpx, NO_WAIT, "embedding", str)
    assert calls == [1]
    assert error.value.code == "EMBED_ERROR" and error.value.recoverable is False


def test_an_indexfoundry_error_raised_by_the_call_passes_through_untouched():
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise NotFound("no such model")

    with pytest.raises(NotFound):
        call_with_retries(call, lambda exc: Failure(True, "would retry"), NO_WAIT, "embedding", str)
    assert calls == [1]


@pytest.mark.timeout(60)
def test_the_servers_retry_after_wins_over_the_configured_backoff(server: EmbeddingServer):
    server.script = [("429", "0")]
    # A ten-minute backoff: only Retry-After: 0 lets this call come back (the timeout fails it otherwise).
    slow = RetryConfig(max_retries=1, backoff_ms=600_000)
    assert call_with_retries(_embed(server), classify_httpx, slow, "embedding", str) == 1


def test_the_message_of_a_final_failure_goes_through_the_redactor():
    def call() -> None:
        raise _status_error(401)

    backend = KeyedBackend()
    backend._key = "sk-canary-123"

    def classify(exc: Exception) -> Failure:
        return Failure(False, "refused key sk-canary-123")

    with pytest.raises(IndexFoundryError) as error:
        call_with_retries(call, classify, NO_WAIT, "embedding", backend._redact)
    assert "sk-canary-123" not in error.value.message and "***" in error.value.message


def test_a_key_is_read_from_its_variable_and_a_missing_required_one_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("IF_TEST_KEY", "k-1")
    assert api_key("IF_TEST_KEY", "openai", required=True) == "k-1"
    monkeypatch.setenv("IF_TEST_KEY", "")
    assert api_key("IF_TEST_KEY", "openai", required=False) is None
    monkeypatch.delenv("IF_TEST_KEY")
    with pytest.raises(IndexFoundryError) as error:
        api_key("IF_TEST_KEY", "openai", required=True)
    assert error.value.code == "CONFIG_INVALID" and "IF_TEST_KEY" in error.value.message


def test_a_backend_without_a_key_redacts_nothing():
    assert KeyedBackend()._redact("plain text") == "plain text"


def test_retry_after_reads_seconds_milliseconds_and_dates():
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after({}) is None
