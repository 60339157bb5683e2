"""Wall-clock helpers. Times go into manifests and logs only, never into content artifacts."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def utc_now() -> str:
    """Current UTC time in ISO 8601 with milliseconds and a 'Z'."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def monotonic_ms() -> int:
    """Monotonic clock in milliseconds, for durations."""
    return int(time.monotonic() * 1000)
