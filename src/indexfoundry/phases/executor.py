"""The executor seam: where a phase's per-document and per-batch work runs.

A phase hands its context's executor (``PhaseContext.executor``) an ordered ``map`` of a per-item
function over items (one item per document for extract and normalize, one per batch of texts for
embedding). The executor only computes: results come back to the driver in item order, and the
phase writes every artifact itself, in canonical order. So whatever the executor, the artifacts
are byte-identical.

Work on hostile input (extract's and normalize's per-document jobs) goes through
``map_limited``: every item under a time and a memory limit in a worker process, a
``phases.isolation.Stopped`` for an item that broke one (the phase turns it into its error code).

- ``LocalExecutor`` runs ``map`` here, item after item, and ``map_limited`` in a pool of limited
  worker processes (``phases.isolation.IsolationPool``). By default it keeps that pool as long as
  it lives: a run opens one executor for all its phases, and the docs server keeps one for its
  lifetime, so a refresh after an edit finds its workers already started; ``close()`` stops
  them. ``LOCAL`` (``keep_workers=False``) keeps nothing: each ``map_limited`` starts workers for
  that call; it is what a phase gets when nobody opened an executor for it (``run_phase``, the
  tools).
- ``RayExecutor`` (``pipeline/ray_executor.py``, extra ``ray``) runs it on a Ray cluster; its
  ``map_limited`` runs each item in one limited process on its worker. The pipeline chooses and
  opens the executor (``pipeline/executors.py``); the phases only see this interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from indexfoundry.phases.isolation import InOneLimitedProcess, IsolationPool, Limits, Stopped

T = TypeVar("T")
R = TypeVar("R")

# What one item is: a document (extract, normalize) or a batch of texts to embed. An executor
# may place them differently: embedding batches go to long-lived workers that keep a model loaded.
# "store": a batch of vectors upserted into a server store by a worker.
WorkKind = Literal["document", "embed", "store"]


class Executor(ABC):
    """Runs a per-item function over items and returns the results in item order."""

    name: ClassVar[str]
    # True when items run outside this process: the phase then sends everything an item needs
    # with it (text, raw bytes) and keeps its in-process shortcuts to itself.
    remote: ClassVar[bool] = False

    @abstractmethod
    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        kind: WorkKind = "document",
        on_result: Callable[[int, R], None] | None = None,
    ) -> list[R]:
        """``[fn(item) for item in items]``; ``on_result(index, result)`` as each one finishes
        (in any order: progress, and writes that are content-addressed)."""

    def map_limited(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        limits: Limits,
        *,
        on_result: Callable[[int, R | Stopped], None] | None = None,
    ) -> list[R | Stopped]:
        """``map`` of documents, each under ``limits`` in a worker process (``limits.workers``
        0: here, without limits); an item that ran past the time limit or whose worker died is
        a ``Stopped``. ``fn`` is a module-level function that turns every failure it can catch
        into a result. Here (a remote executor): each item in one limited process on its worker."""
        return self.map(InOneLimitedProcess(fn, limits), items, kind="document", on_result=on_result)

    def report(self) -> dict[str, Any]:
        """Figures since the last call (per-worker counts, retries, devices), for the phase
        manifest's ``details.executor``; empty for the local executor."""
        return {}

    def embedding_device(self, embedder: Any) -> str:
        """The device class ``embedder``'s batches will run on (``cpu`` or ``cuda``): it keys
        the embedding cache, so vectors made on GPUs never stand in for CPU vectors."""
        return "cpu"

    def embedding_devices(self) -> list[str]:
        """Devices the embedding workers ran on since the last report (empty: this process, the CPU)."""
        return []

    def close(self) -> None:
        """Release workers and connections."""
        return None


class LocalExecutor(Executor):
    """Runs every item in this process, in order; limited items in worker processes, kept in
    its own pool between calls (``keep_workers``) or started for each call."""

    name = "local"

    def __init__(self, *, keep_workers: bool = True) -> None:
        self.keep_workers = keep_workers
        self._pool: IsolationPool | None = None

    @property
    def pool(self) -> IsolationPool:
        """The limited worker processes ``map_limited`` keeps (started on first use)."""
        if self._pool is None:
            self._pool = IsolationPool()
        return self._pool

    def map_limited(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        limits: Limits,
        *,
        on_result: Callable[[int, R | Stopped], None] | None = None,
    ) -> list[R | Stopped]:
        if self.keep_workers:
            return self.pool.run(items, fn, limits, on_done=on_result)
        pool = IsolationPool()  # workers for this call only
        try:
            return pool.run(items, fn, limits, on_done=on_result)
        finally:
            pool.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        kind: WorkKind = "document",
        on_result: Callable[[int, R], None] | None = None,
    ) -> list[R]:
        results: list[R] = []
        for index, item in enumerate(items):
            result = fn(item)
            results.append(result)
            if on_result is not None:
                on_result(index, result)
        return results


# The executor of a phase nobody opened one for: local, its limited workers started per call.
LOCAL = LocalExecutor(keep_workers=False)
