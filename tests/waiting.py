"""Waiting in tests: a condition checked until it holds or a deadline passes, never a fixed sleep.

``wait_for(condition, timeout=...)`` calls ``condition`` every ``interval`` seconds and returns
its first truthy value, or its last (falsy) value once ``timeout`` seconds have passed, so the
caller says what a timeout means (``assert wait_for(...), "the server did not start"``). A
condition that sees the wait can never succeed (the process it waits for exited) raises, and
the wait ends with its error. ``wait_for_async`` is the same for a coroutine condition (anyio).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], *, timeout: float, interval: float = 0.05) -> T:
    """The first truthy ``condition()``, or its last value when ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        left = deadline - time.monotonic()
        if value or left <= 0:
            return value
        time.sleep(min(interval, left))


async def wait_for_async(condition: Callable[[], Awaitable[T]], *, timeout: float, interval: float = 0.05) -> T:
    """``wait_for`` for a coroutine ``condition``, sleeping with ``anyio``."""
    import anyio

    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        left = deadline - time.monotonic()
        if value or left <= 0:
            return value
        await anyio.sleep(min(interval, left))
