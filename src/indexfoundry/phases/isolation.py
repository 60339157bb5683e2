"""Run jobs in worker processes, each job under a time and a memory limit.

Shared by the phases that work on one hostile document at a time (extract, normalize). A
pool of worker processes takes jobs one at a time. A job that runs past ``timeout_s`` has
its worker killed; a worker whose address space would grow past ``memory_mb``
(``RLIMIT_AS``, set in the worker) fails its allocation, or dies. Either way the job's
outcome is a ``Stopped`` saying why, the worker is replaced, and the other jobs go on. The
caller turns a ``Stopped`` into its own error code. Outcomes are returned in job order, so
the caller's output does not depend on the number of workers or the order they finish in.

Workers are forked from a ``forkserver`` that has the phases' modules imported (each phase
registers its own with ``preload``): it never inherits the parent's threads (Chroma, torch)
or open handles. An ``IsolationPool`` keeps its workers between calls (the local executor
owns one: ``phases/executor.py``), so a long-lived process pays for starting them once;
``run_isolated`` without a pool starts them for one call. ``workers=0`` runs every job in
the calling process, in order, without limits.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
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


def _address_space() -> int:
    """This process's address space in bytes (0 where /proc cannot tell)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_resources(memory_mb: int) -> int:
    """Cap this worker's address space at its current size plus ``memory_mb``; no core dumps.
    Returns the size it started from."""
    import resource

    baseline = _address_space()
    limit = baseline + memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return baseline


def _worker_main(conn: Connection, memory_mb: int) -> None:
    """Worker loop: receive ``(task, job)``, send back ``task(job)``, until told to stop.

    Anything that escapes the loop (a MemoryError raised while the outcome of a job that used
    up the address space is built or sent) ends the process at once with exit code 70: the
    exit handlers multiprocessing would run on the way out can spin for minutes at the address
    space limit, so the pool would see the job run into its time limit instead of a dead worker."""
    try:
        _serve(conn, memory_mb)
    except BaseException:
        os._exit(70)


def _serve(conn: Connection, memory_mb: int) -> None:
    # One OCR thread per worker: the pool already uses every core.
    os.environ["OMP_THREAD_LIMIT"] = "1"
    baseline = _limit_resources(memory_mb)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        task, job = message
        result = task(job)
        # A worker whose address space grew by more than a quarter of its limit retires after
        # this job, so a worker kept for later jobs always has most of its limit left.
        retire = _address_space() - baseline > memory_mb * 1024 * 1024 // 4
        try:
            conn.send((result, retire))
        except (OSError, ValueError):
            return
        if retire:
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
        self.memory_mb = memory_mb
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


# Idle workers a pool keeps at most: enough for every core of a pool of two memory limits.
_MAX_IDLE = max(4, 2 * default_workers())


class IsolationPool:
    """Limited worker processes kept from one call of ``run`` to the next.

    Starting a worker costs a fork from the fork server and its first imports (about a second
    on a busy machine): a long-lived owner (``phases.executor.LocalExecutor``, held by the
    docs server for its lifetime) keeps its workers warm between phases and runs, so a refresh
    after one edit sends the changed file to a worker that is already there. Every limit holds
    as in a fresh worker: each job has its own deadline, a worker past it is killed and
    replaced, the memory limit is the worker's address space at start plus ``memory_mb`` (a
    worker that grew by a quarter of that retires after its job), and a worker that died
    while idle is never given a job. ``close()`` stops the workers.
    """

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self.started = 0  # workers started over the pool's life (tests, benchmarks)

    def _take(self, ctx: Any, memory_mb: int) -> _Worker:
        """An idle worker started with this memory limit and still alive, else a new one."""
        found: _Worker | None = None
        with self._lock:
            dead = [w for w in self._idle if not w.process.is_alive()]
            self._idle = [w for w in self._idle if w not in dead]
            for worker in reversed(self._idle):
                if worker.memory_mb == memory_mb:
                    found = worker
                    self._idle.remove(worker)
                    break
            if found is None:
                self.started += 1
        for worker in dead:
            worker.stop(kill=True)
        return found if found is not None else _Worker(ctx, memory_mb)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(worker)
                # Idle workers are bounded (older ones started for another memory limit go first).
                surplus = self._idle[: max(0, len(self._idle) - _MAX_IDLE)]
                self._idle = self._idle[len(surplus) :]
            else:
                surplus = [worker]
        for old in surplus:
            old.stop()

    def idle_pids(self) -> list[int]:
        """Process ids of the workers waiting for a job."""
        with self._lock:
            return [w.process.pid for w in self._idle if w.process.pid is not None]

    def close(self) -> None:
        """Stop the idle workers; a ``run`` under way stops its own when it ends (the pool
        still runs jobs after ``close``, in workers started for them)."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for worker in idle:
            worker.stop()

    def run(
        self,
        jobs: Iterable[J],
        task: Callable[[J], R],
        limits: Limits,
        on_done: Callable[[int, R | Stopped], None] | None = None,
    ) -> list[R | Stopped]:
        """Run ``task(job)`` for every job in at most ``limits.workers`` of this pool's workers
        (0: in the calling process, in order, without limits); outcomes in job order, and
        ``on_done(index, outcome)`` as each one arrives."""
        pending = list(jobs)
        outcomes: list[R | Stopped | None] = [None] * len(pending)

        def finish(index: int, outcome: R | Stopped) -> None:
            outcomes[index] = outcome
            if on_done is not None:
                on_done(index, outcome)

        if limits.workers == 0:
            for index, job in enumerate(pending):
                finish(index, task(job))
            return [o for o in outcomes if o is not None]
        if not pending:
            return []
        ctx = _context()
        queue = deque(enumerate(pending))
        size = min(limits.workers, len(queue))
        active: dict[_Worker, _Pending[J]] = {}
        kept: list[_Worker] = []  # workers done with their job, kept for the next one
        try:
            while queue or active:
                while queue and len(active) < size:
                    worker = kept.pop() if kept else self._take(ctx, limits.memory_mb)
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
                            result, retire = worker.conn.recv()
                        except (EOFError, OSError):
                            del active[worker]
                            worker.process.join(timeout=1)  # its pipe closed as it exited: its code
                            code = worker.process.exitcode
                            worker.stop(kill=True)
                            finish(item.index, _died(code, limits.memory_mb))
                            continue
                        del active[worker]
                        if retire:
                            worker.stop()
                        else:
                            kept.append(worker)
                        finish(item.index, result)
                    elif worker.process.sentinel in ready:
                        del active[worker]
                        worker.process.join(timeout=1)
                        code = worker.process.exitcode
                        worker.stop(kill=True)
                        finish(item.index, _died(code, limits.memory_mb))
                    elif now >= item.deadline:
                        del active[worker]
                        worker.stop(kill=True)
                        finish(item.index, Stopped("time", f"took longer than {limits.timeout_s:g} s and was stopped"))
        finally:
            for worker in active:  # interrupted (an exception in on_done, KeyboardInterrupt)
                worker.stop(kill=True)
            for worker in kept:
                self._give_back(worker)
        return [o for o in outcomes if o is not None]


def run_isolated(
    jobs: Iterable[J],
    task: Callable[[J], R],
    limits: Limits,
    on_done: Callable[[J, R | Stopped], None] | None = None,
    pool: IsolationPool | None = None,
) -> list[R | Stopped]:
    """Run ``task(job)`` for every job under ``limits``; outcomes in job order.

    ``task`` must be a module-level function (it is sent to the workers by name) that turns
    every failure it can catch into a result; ``on_done`` sees each outcome as it arrives.
    Without a ``pool`` the workers are started for this call and stopped at its end.
    """
    pending = list(jobs)

    def done(index: int, outcome: R | Stopped) -> None:
        if on_done is not None:
            on_done(pending[index], outcome)

    own = pool is None
    work = IsolationPool() if pool is None else pool
    try:
        return work.run(pending, task, limits, on_done=done)
    finally:
        if own:
            work.close()


class InOneLimitedProcess(Generic[J, R]):
    """``task(job)`` in one limited worker process started for it (what a remote executor's
    task runs, so each document is limited there as here): the outcome, or a ``Stopped``."""

    def __init__(self, task: Callable[[J], R], limits: Limits) -> None:
        self.task = task
        self.limits = limits

    def __call__(self, job: J) -> R | Stopped:
        if self.limits.workers == 0:
            return self.task(job)
        single = Limits(1, self.limits.timeout_s, self.limits.memory_mb)
        return run_isolated([job], self.task, single)[0]
