"""Wall-clock helpers (``storage/clock.py``): manifest times in one ISO 8601 form, durations monotonic."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from indexfoundry.storage.clock import monotonic_ms, utc_now

ISO_MS_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def test_utc_now_is_iso_8601_with_milliseconds_and_a_z_and_reads_back_as_now():
    before = datetime.now(UTC)
    stamp = utc_now()
    after = datetime.now(UTC)
    assert ISO_MS_Z.fullmatch(stamp), stamp
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert before - timedelta(milliseconds=1) <= parsed <= after


def test_utc_now_strings_sort_in_time_order():
    stamps = [utc_now() for _ in range(50)]
    assert stamps == sorted(stamps)


def test_monotonic_ms_never_goes_back():
    readings = [monotonic_ms() for _ in range(1000)]
    assert all(isinstance(r, int) for r in readings)
    assert readings == sorted(readings)
