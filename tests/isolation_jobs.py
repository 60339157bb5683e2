"""Jobs for tests/unit/phases/test_isolation.py, in a module of their own: a worker imports
the module of the job it runs, and this one imports nothing heavy (a worker that had to import
pydantic first could miss a one-second deadline on a busy machine)."""

from __future__ import annotations

import os
import time

_held: list[bytearray] = []


def pid_of_worker(job: int) -> tuple[int, int]:
    return job, os.getpid()


def sleep_then_pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def allocate_mb(megabytes: int) -> tuple[str, int]:
    try:
        _held.append(bytearray(megabytes * 1024 * 1024))  # held for the worker's life
    except MemoryError:
        return "memory error", os.getpid()
    return "held", os.getpid()


class _OutOfMemoryWhenSent:
    """A result whose pickling fails as it would with the address space used up."""

    def __reduce__(self) -> tuple[object, ...]:
        raise MemoryError("no memory left to send the result")


def result_that_cannot_be_sent(job: int) -> _OutOfMemoryWhenSent:
    return _OutOfMemoryWhenSent()
