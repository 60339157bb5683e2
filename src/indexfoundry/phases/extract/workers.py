"""Parallel extraction in worker processes, each document under a time and a memory limit.

Every document is one job. A pool of worker processes (``extract.workers``, default: the
number of cores; ``0`` runs in the calling process without limits) takes jobs one at a time.
A job that runs past ``extract.timeout_s`` has its worker killed; a worker whose address
space would grow past ``extract.memory_mb`` (``RLIMIT_AS``, set in the worker) fails its
allocation. Either way the document becomes a PARSE_ERROR saying why, the worker is
replaced, and the other documents go on. Results are keyed by job, so the caller writes
them in its own (sorted) order: output is byte-identical whatever the number of workers.

Workers are forked from a ``forkserver`` that has the extractors imported: starting one
is cheap, and it never inherits the parent's threads (Chroma, torch) or open handles.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from indexfoundry.errors import IndexFoundryError, ParseError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, ExtractOptions, Unsupported, extract_bytes

# Modules imported once in the fork server, so each worker starts with them loaded.
_PRELOAD = [
    "indexfoundry.phases.extract.workers",
    "indexfoundry.phases.extract.dispatch",
    "indexfoundry.phases.extract.pdf",
    "indexfoundry.phases.extract.pdflayout",
    "indexfoundry.phases.extract.ocr",
    "indexfoundry.phases.extract.html",
    "indexfoundry.phases.extract.docx",
    "indexfoundry.phases.extract.tabular",
    "pdfminer.pdfinterp",
    "pdfminer.converter",
    "pypdfium2",
    "docx",
    "bs4",
    "lxml.etree",
    "markdownify",
]


@dataclass(frozen=True)
class ExtractJob:
    """One raw file to extract; ``key`` identifies it in the results."""

    key: int
    path: str
    raw: RawRecord
    config: PipelineConfig
    options: ExtractOptions = field(default_factory=ExtractOptions)
    # The raw bytes, when they travel with the job (a Ray worker without the runs folder).
    data: bytes | None = None


@dataclass
class ExtractResult:
    """What became of one job: documents, an unsupported type, or an error."""

    items: list[ExtractedText] = field(default_factory=list)
    unsupported: str | None = None
    error: IndexFoundryError | None = None
    seconds: float = 0.0


def run_job(job: ExtractJob) -> ExtractResult:
    """Extract one file, turning every failure into a result (the isolation boundary of a job)."""
    start = time.monotonic()
    uri = job.raw.uri
    try:
        data = job.data if job.data is not None else Path(job.path).read_bytes()
        items = extract_bytes(data, job.raw, job.config, job.options)
        result = ExtractResult(items=items)
    except Unsupported as exc:
        result = ExtractResult(unsupported=str(exc))
    except IndexFoundryError as error:
        result = ExtractResult(error=error)
    except MemoryError:
        result = ExtractResult(
            error=ParseError(
                f"{uri} needs more memory than the limit (extract.memory_mb = {job.config.extract.memory_mb})",
                suggestion="Raise extract.memory_mb, or exclude the file",
                details={"uri": uri, "limit": "memory"},
            )
        )
    except RecursionError:
        result = ExtractResult(
            error=ParseError(
                f"{uri} is nested too deeply to parse", suggestion="Exclude the file", details={"uri": uri}
            )
        )
    except OSError as exc:
        result = ExtractResult(
            error=ParseError(
                f"cannot read {uri}: {exc}", suggestion="Check the run's raw/ folder", details={"uri": uri}
            )
        )
    except Exception as exc:  # the job boundary: a parser bug on one file must not end the run
        result = ExtractResult(
            error=ParseError(
                f"{uri} could not be extracted: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                suggestion="The file is probably malformed; exclude it or report the problem with this file",
                details={"uri": uri, "traceback": traceback.format_exc(limit=8)},
            )
        )
    result.seconds = round(time.monotonic() - start, 3)
    return result


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
    """Worker loop: receive a job, send back its result, until told to stop."""
    # One OCR thread per worker: the pool already uses every core.
    os.environ["OMP_THREAD_LIMIT"] = "1"
    _limit_resources(memory_mb)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        result = run_job(job)
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
        ctx.set_forkserver_preload(_PRELOAD)
        _CONTEXT = ctx
    return _CONTEXT


def default_workers() -> int:
    """Number of worker processes when ``extract.workers`` is not set: the usable cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _killed(job: ExtractJob, reason: str, limit: str) -> ExtractResult:
    cfg = job.config.extract
    hint = (
        "Raise extract.timeout_s, or exclude the file"
        if limit == "time"
        else "Raise extract.memory_mb, or exclude the file"
    )
    return ExtractResult(
        error=ParseError(
            f"{job.raw.uri}: {reason}",
            suggestion=hint,
            details={"uri": job.raw.uri, "limit": limit, "timeout_s": cfg.timeout_s, "memory_mb": cfg.memory_mb},
        )
    )


def run_jobs(
    jobs: Iterable[ExtractJob],
    workers: int,
    timeout_s: float,
    memory_mb: int,
    on_done: Callable[[ExtractJob, ExtractResult], None] | None = None,
) -> dict[int, ExtractResult]:
    """Run ``jobs`` in ``workers`` processes (0: here, in order); results keyed by ``job.key``."""
    queue = deque(jobs)
    results: dict[int, ExtractResult] = {}
    if workers == 0:
        for job in queue:
            results[job.key] = run_job(job)
            if on_done is not None:
                on_done(job, results[job.key])
        return results
    if not queue:
        return results
    ctx = _context()
    size = min(workers, len(queue))
    idle: list[_Worker] = []
    active: dict[_Worker, tuple[ExtractJob, float]] = {}

    def finish(job: ExtractJob, result: ExtractResult) -> None:
        results[job.key] = result
        if on_done is not None:
            on_done(job, result)

    try:
        while queue or active:
            while queue and len(active) < size:
                worker = idle.pop() if idle else _Worker(ctx, memory_mb)
                job = queue.popleft()
                try:
                    worker.conn.send(job)
                except (OSError, ValueError):
                    worker.stop(kill=True)
                    queue.appendleft(job)
                    continue
                active[worker] = (job, time.monotonic() + timeout_s)
            now = time.monotonic()
            next_deadline = min(deadline for _, deadline in active.values())
            handles: list[Any] = [w.conn for w in active] + [w.process.sentinel for w in active]
            ready = set(wait(handles, timeout=max(0.0, next_deadline - now)))
            now = time.monotonic()
            for worker in list(active):
                job, deadline = active[worker]
                if worker.conn in ready:
                    try:
                        result: ExtractResult = worker.conn.recv()
                    except (EOFError, OSError):
                        del active[worker]
                        code = worker.process.exitcode
                        worker.stop(kill=True)
                        finish(job, _died(job, code))
                        continue
                    del active[worker]
                    idle.append(worker)
                    finish(job, result)
                elif worker.process.sentinel in ready:
                    del active[worker]
                    worker.process.join(timeout=1)
                    code = worker.process.exitcode
                    worker.stop(kill=True)
                    finish(job, _died(job, code))
                elif now >= deadline:
                    del active[worker]
                    worker.stop(kill=True)
                    finish(job, _killed(job, f"extraction took longer than {timeout_s:g} s and was stopped", "time"))
    finally:
        for worker in [*idle, *active]:
            worker.stop(kill=worker in active)
    return results


def run_limited_job(job: ExtractJob) -> ExtractResult:
    """One job in one limited worker process, as in the local pool (what a Ray task runs):
    the same time and memory limits, the same PARSE_ERROR when a file breaks them."""
    cfg = job.config.extract
    return run_jobs([job], 0 if cfg.workers == 0 else 1, cfg.timeout_s, cfg.memory_mb)[job.key]


def _died(job: ExtractJob, exitcode: int | None) -> ExtractResult:
    how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
    return _killed(
        job,
        f"the extraction worker died ({how}); the file probably exceeded the memory limit "
        f"({job.config.extract.memory_mb} MB) or crashed the parser",
        "memory",
    )
