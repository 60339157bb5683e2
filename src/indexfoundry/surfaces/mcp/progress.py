"""Progress reporters for the MCP surface.

``McpProgress`` turns the phases' progress protocol (``task(description, total)`` yielding an
object with ``advance(n)``) into MCP ``notifications/progress``. Tools run in worker threads;
each report is handed to the event loop with ``anyio.from_thread.run`` and the loop's token,
so it works from any thread a phase may use. Progress values only ever increase (the protocol
requires it): the value is the count of steps done over all tasks of the call.

``StderrProgress`` writes one line per task (start, every 10 %, end) to stderr: the docs mode
shows indexing progress there, since stdout belongs to the protocol.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel

Report = Callable[[float, float | None, str | None], Awaitable[None]]


class _Task:
    def __init__(self, owner: McpProgress, description: str, total: int | None) -> None:
        self.owner = owner
        self.description = description
        self.total = total
        self.done = 0

    def advance(self, amount: int = 1) -> None:
        self.done += amount
        self.owner.step(amount, self._message())

    def _message(self) -> str:
        return f"{self.description}: {self.done}/{self.total}" if self.total is not None else self.description


class McpProgress:
    """Progress reporter that sends MCP progress notifications for one tool call."""

    def __init__(self, report: Report, token: Any) -> None:
        self._report = report
        self._token = token
        self._lock = threading.Lock()
        self.value = 0.0
        self.sent = 0

    @classmethod
    def for_current_loop(cls, report: Report) -> McpProgress:
        """Bind to the running event loop (call from the async tool handler)."""
        return cls(report, anyio.lowlevel.current_token())

    def step(self, amount: int, message: str | None) -> None:
        with self._lock:
            self.value += max(amount, 0) or 0.001  # strictly increasing, even for advance(0)
            value = self.value
        self._send(value, message)

    def _send(self, value: float, message: str | None) -> None:
        try:
            anyio.from_thread.run(self._notify, value, message, token=self._token)
            self.sent += 1
        except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The client went away or the loop is closing: progress is best effort.
            return

    async def _notify(self, value: float, message: str | None) -> None:
        await self._report(value, None, message)

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_Task]:
        task = _Task(self, description, total)
        self.step(0, f"{description}: started")
        try:
            yield task
        finally:
            self.step(0, f"{description}: done")


class _StderrTask:
    def __init__(self, out: TextIO, description: str, total: int | None) -> None:
        self.out = out
        self.description = description
        self.total = total
        self.done = 0
        self._next = 0.1

    def advance(self, amount: int = 1) -> None:
        self.done += amount
        if self.total and self.done / self.total >= self._next and self.done < self.total:
            print(f"indexfoundry: {self.description} {self.done}/{self.total}", file=self.out, flush=True)
            while self._next <= self.done / self.total:
                self._next += 0.1


class StderrProgress:
    """Plain progress lines on stderr (never stdout: stdio is the protocol's)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_StderrTask]:
        size = f" ({total})" if total is not None else ""
        print(f"indexfoundry: {description}{size}…", file=self.out, flush=True)
        task = _StderrTask(self.out, description, total)
        yield task
        print(f"indexfoundry: {description} done", file=self.out, flush=True)


async def noop_report(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Report function for calls without a progress token."""
    await anyio.lowlevel.checkpoint()
