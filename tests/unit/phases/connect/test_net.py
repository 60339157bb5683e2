"""The fetcher's retry rules, without a network: Retry-After in seconds and HTTP dates."""

from __future__ import annotations

from datetime import UTC, datetime

from indexfoundry.phases.connect.net import parse_retry_after


def test_retry_after_accepts_seconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
