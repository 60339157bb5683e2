"""Run jobs in worker processes, each job under a time and a memory limit.

Shared by the phases that work on one hostile document at a time (extract, normalize). A
pool of worker processes takes jobs one at a time. A job that runs past ``timeout_s`` has
its worker killed; a worker whose address space would grow past ``memory_mb``
(``RLIMIT_AS``, set in the worker) fails its allocation, or dies. Either way the job's
outcome is a ``Stopped`` saying why, the worker is replaced, and the other jobs go on. The
caller turns a ``Stopped`` into its own error code. Outcomes are returned in job order, so
the caller's output does not depend on the number of workers or the order they finish in.

Workers are forked from a ``forkserver`` that has the phases' modules imported (each phase
registers its own with ``preload``): starting one is cheap, and it never inherits the
parent's threads (Chroma, torch) or open handles. ``workers=0`` runs every job in the
calling process, in order, without limits.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, Literal, TypeVar

J = TypeVar("J")
R = TypeVar("R")

_PRELOAD: list[str] = ["indexfoundry.phases.isolation"]


def preload(modules: Iterable[str]) -> None:
    """Have the fork server import ``modules`` (call at import time, before the first job)."""
    for module in modules:
        if module not in _PRELOAD:
            _PRELOAD.append(module)


@dataclass(frozen=True)
class Stopped:
    """A job that did not return: it ran past the time limit, or its worker died."""

    limit: Literal["time", "memory"]
    reason: str


@dataclass(frozen=True)
class Limits:
    """Worker processes (0: in the calling process, no limits) and the per-job limits."""

    workers: int
    timeout_s: float
    memory_mb: int


def default_workers() -> int:
    """Number of worker processes when none is configured: the usable cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _limit_resources(memory_mb: int) -> None:
    """Cap this worker's address space at its current size plus ``memory_mb``; no core dumps."""
    import resource

    baseline = 0
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            baseline = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        baseline = 0
    limit = baseline + memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _worker_main(conn: Connection, memory_mb: int) -> None:
    """Worker loop: receive ``(task, job)``, send back ``task(job)``, until told to stop."""
    # One OCR thread per worker: the pool already uses every core.
    os.environ["OMP_THREAD_LIMIT"] = "1"
    _limit_resources(memory_mb)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        task, job = message
        result = task(job)
        try:
            conn.send(result)
        except (OSError, ValueError):
            return


@contextmanager
def _main_script_hidden() -> Iterator[None]:
    """Keep workers from re-running the caller's ``__main__`` script.

    Workers need nothing from it, and a script without an ``if __name__ == "__main__"``
    guard would otherwise start the pipeline again in every worker. A ``python -m`` main
    module is imported by name as usual.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    hide = main is not None and path is not None and getattr(main, "__spec__", None) is None
    if hide:
        del main.__file__  # type: ignore[union-attr]
    try:
        yield
    finally:
        if hide:
            main.__file__ = path  # type: ignore[union-attr]


class _Worker:
    def __init__(self, ctx: Any, memory_mb: int) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_worker_main, args=(child, memory_mb), daemon=True)
        with _main_script_hidden():
            self.process.start()
        child.close()

    def stop(self, kill: bool = False) -> None:
        if not kill:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                kill = True
            self.process.join(timeout=2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()


_CONTEXT: Any = None


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(_PRELOAD))
        _CONTEXT = ctx
    return _CONTEXT


def _died(exitcode: int | None, memory_mb: int) -> Stopped:
    how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
    return Stopped(
        "memory",
        f"the worker died ({how}); the document probably exceeded the memory limit ({memory_mb} MB) "
        "or crashed its parser",
    )


@dataclass
class _Pending(Generic[J]):
    index: int
    job: J
    deadline: float


def run_isolated(
    jobs: Iterable[J],
    task: Callable[[J], R],
    limits: Limits,
    on_done: Callable[[J, R | Stopped], None] | None = None,
) -> list[R | Stopped]:
    """Run ``task(job)`` for every job under ``limits``; outcomes in job order.

    ``task`` must be a module-level function (it is sent to the workers by name) that turns
    every failure it can catch into a result; ``on_done`` sees each outcome as it arrives.
    """
    pending = list(jobs)
    outcomes: list[R | Stopped | None] = [None] * len(pending)

    def finish(index: int, job: J, outcome: R | Stopped) -> None:
        outcomes[index] = outcome
        if on_done is not None:
            on_done(job, outcome)

    if limits.workers == 0:
        for index, job in enumerate(pending):
            finish(index, job, task(job))
        return [o for o in outcomes if o is not None]
    if not pending:
        return []
    ctx = _context()
    queue = deque(enumerate(pending))
    size = min(limits.workers, len(queue))
    idle: list[_Worker] = []
    active: dict[_Worker, _Pending[J]] = {}
    try:
        while queue or active:
            while queue and len(active) < size:
                worker = idle.pop() if idle else _Worker(ctx, limits.memory_mb)
                index, job = queue.popleft()
                try:
                    worker.conn.send((task, job))
                except (OSError, ValueError):
                    worker.stop(kill=True)
                    queue.appendleft((index, job))
                    continue
                active[worker] = _Pending(index, job, time.monotonic() + limits.timeout_s)
            now = time.monotonic()
            next_deadline = min(p.deadline for p in active.values())
            handles: list[Any] = [w.conn for w in active] + [w.process.sentinel for w in active]
            ready = set(wait(handles, timeout=max(0.0, next_deadline - now)))
            now = time.monotonic()
            for worker in list(active):
                item = active[worker]
                if worker.conn in ready:
                    try:
                        result: R = worker.conn.recv()
                    except (EOFError, OSError):
                        del active[worker]
                        code = worker.process.exitcode
                        worker.stop(kill=True)
                        finish(item.index, item.job, _died(code, limits.memory_mb))
                        continue
                    del active[worker]
                    idle.append(worker)
                    finish(item.index, item.job, result)
                elif worker.process.sentinel in ready:
                    del active[worker]
                    worker.process.join(timeout=1)
                    code = worker.process.exitcode
                    worker.stop(kill=True)
                    finish(item.index, item.job, _died(code, limits.memory_mb))
                elif now >= item.deadline:
                    del active[worker]
                    worker.stop(kill=True)
                    finish(
                        item.index,
                        item.job,
                        Stopped("time", f"took longer than {limits.timeout_s:g} s and was stopped"),
                    )
    finally:
        for worker in [*idle, *active]:
            worker.stop(kill=worker in active)
    return [o for o in outcomes if o is not None]
