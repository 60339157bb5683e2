"""The Ray executor: a run's per-document and per-batch work on a Ray cluster.

The driver (the ``pipeline run`` process) stays the source of truth. It plans from the
manifests, consults the embedding cache, sends only the work that is left, and writes every
artifact itself in canonical order; the cluster only computes. So a Ray run's artifacts are
byte-identical to a local run's.

- Documents (extract, normalize) are Ray tasks, a bounded number in flight. Extraction runs
  inside each task in a limited child process, exactly as locally (``extract.timeout_s``,
  ``extract.memory_mb``), so a hostile file fails alone with the same PARSE_ERROR.
- Embedding batches go to a pool of actors. Each actor keeps the model it loaded for its
  whole life (loaded once per worker), and asks Ray for ``execution.num_gpus`` GPUs.
- A task whose worker process or node died is retried by Ray, ``execution.max_retries``
  times (actors are restarted as often); after that the phase fails, recoverable: rerun the
  run with ``--run-id`` to resume it.

Usage statistics are off (``RAY_USAGE_STATS_ENABLED=0``) and no dashboard is started.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

# Before ray is imported: no usage statistics are collected or sent.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray
import ray.exceptions

from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.config import ExecutionConfig
from indexfoundry.pipeline.executors import Executor, WorkKind

T = TypeVar("T")
R = TypeVar("R")


def _node() -> str:
    return str(ray.get_runtime_context().get_node_id())[:12]


def run_document_task(fn: Callable[[Any], Any], item: Any) -> tuple[Any, str]:
    """One document's work on a worker; returns the result and the node it ran on."""
    return fn(item), _node()


@ray.remote
class EmbedWorker:
    """A long-lived embedding worker: what ``fn`` loads (the model) stays loaded across batches."""

    def __init__(self, label: str) -> None:
        self.label = label

    def run(self, fn: Callable[[Any], Any], item: Any) -> tuple[Any, str]:
        return fn(item), self.label


class _Feed:
    """Items in order, read one at a time as they are sent (a lazy sequence stays lazy)."""

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = items
        self.position = 0

    def __bool__(self) -> bool:
        return self.position < len(self.items)

    def next(self) -> tuple[int, Any]:
        index = self.position
        self.position += 1
        return index, self.items[index]


def _hostport(address: str) -> tuple[str, int] | None:
    if address == "auto":
        return None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    return host, int(port)


def _unreachable(address: str, reason: str) -> ConfigInvalid:
    return ConfigInvalid(
        f"cannot reach the Ray cluster at {address}: {reason}",
        recoverable=True,
        suggestion="Start it ('ray start --head --port PORT') or pass its head address to --ray-address "
        "(HOST:PORT of the head node, or ray://HOST:PORT for Ray Client)",
        details={"address": address},
    )


class RayExecutor(Executor):
    """Runs items on a Ray cluster; see the module docstring."""

    name = "ray"
    remote = True

    def __init__(self, config: ExecutionConfig) -> None:
        self.config = config
        self.address = config.address
        self._connected_here = False
        self._actors: list[Any] = []
        self._counts: Counter[str] = Counter()
        self._connect()

    # ---------------------------------------------------------------- connection
    def _connect(self) -> None:
        target = _hostport(self.address)
        if target is not None:
            # A quick TCP check first: ray.init would wait a long time on an address that is down.
            try:
                with socket.create_connection(target, timeout=min(self.config.connect_timeout_s, 10)):
                    pass
            except OSError as exc:
                raise _unreachable(self.address, exc.strerror or type(exc).__name__) from None
        if ray.is_initialized():  # a library caller connected already: use that connection
            return
        try:
            ray.init(
                address=self.address,
                log_to_driver=False,
                logging_level=logging.WARNING,
                configure_logging=True,
                namespace="indexfoundry",
            )
        except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
            raise _unreachable(self.address, " ".join(str(exc).split())[:300]) from None
        self._connected_here = True

    def cluster(self) -> dict[str, Any]:
        """Nodes, CPUs and GPUs of the cluster (alive nodes only)."""
        resources = ray.cluster_resources()  # type: ignore[no-untyped-call]
        nodes = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
        return {
            "nodes": len(nodes),
            "cpus": int(resources.get("CPU", 0)),
            "gpus": int(resources.get("GPU", 0)),
        }

    # ---------------------------------------------------------------- map
    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        kind: WorkKind = "document",
        on_result: Callable[[int, R], None] | None = None,
    ) -> list[R]:
        if not items:
            return []
        fn_ref = ray.put(fn)  # shipped once, not with every item
        if kind == "embed":
            return self._map_actors(fn_ref, items, on_result)
        return self._map_tasks(fn_ref, items, on_result)

    def _map_tasks(self, fn_ref: Any, items: Sequence[Any], on_result: Callable[[int, Any], None] | None) -> list[Any]:
        task = ray.remote(run_document_task).options(
            num_cpus=self.config.num_cpus,
            max_retries=self.config.max_retries,
            retry_exceptions=False,  # a worker or node that died is retried; a bug is not
            name="indexfoundry-document",
        )
        window = max(4, 2 * max(1, self.cluster()["cpus"]))  # bounded: a million documents are not all sent
        results: list[Any] = [None] * len(items)
        feed = _Feed(items)
        pending: dict[Any, int] = {}
        while feed or pending:
            while feed and len(pending) < window:
                index, item = feed.next()
                pending[task.remote(fn_ref, item)] = index
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                index = pending.pop(ref)
                result, where = self._get(ref, "document")
                self._counts[f"node:{where}"] += 1
                results[index] = result
                if on_result is not None:
                    on_result(index, result)
        return results

    def _pool(self) -> list[Any]:
        if self._actors:
            return self._actors
        cluster = self.cluster()
        if self.config.embed_workers is not None:
            size = self.config.embed_workers
        elif self.config.num_gpus > 0:
            size = max(1, int(cluster["gpus"] / self.config.num_gpus))
        else:
            size = max(1, int(cluster["cpus"] / self.config.num_cpus))
        retries = self.config.max_retries
        self._actors = [
            EmbedWorker.options(  # type: ignore[attr-defined]
                num_cpus=self.config.num_cpus,
                num_gpus=self.config.num_gpus,
                max_restarts=retries,
                max_task_retries=retries,
            ).remote(f"actor-{number}")
            for number in range(size)
        ]
        return self._actors

    def _map_actors(self, fn_ref: Any, items: Sequence[Any], on_result: Callable[[int, Any], None] | None) -> list[Any]:
        actors = self._pool()
        results: list[Any] = [None] * len(items)
        feed = _Feed(items)
        pending: dict[Any, tuple[int, Any]] = {}
        free = deque(actors * 2)  # two batches per actor: the next one is ready when one finishes
        while feed or pending:
            while feed and free:
                actor = free.popleft()
                index, item = feed.next()
                pending[actor.run.remote(fn_ref, item)] = (index, actor)
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                index, actor = pending.pop(ref)
                result, label = self._get(ref, "embedding batch")
                self._counts[label] += 1
                results[index] = result
                free.append(actor)
                if on_result is not None:
                    on_result(index, result)
        return results

    def _get(self, ref: Any, what: str) -> Any:
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, IndexFoundryError):
                raise cause from None
            raise IndexFoundryError(
                f"a {what} failed on the Ray cluster at {self.address}: {' '.join(str(cause).split())[:300]}",
                code="INTERNAL_ERROR",
                suggestion="Report the problem with this input",
            ) from None
        except ray.exceptions.RayError as exc:
            raise IndexFoundryError(
                f"a {what} was lost on the Ray cluster at {self.address} after "
                f"{self.config.max_retries} retries: {type(exc).__name__}",
                code="INTERNAL_ERROR",
                recoverable=True,
                suggestion="Check the cluster's nodes, then rerun with --run-id to resume the run",
                details={"address": self.address},
            ) from None

    # ---------------------------------------------------------------- report, close
    def report(self) -> dict[str, Any]:
        counts, self._counts = self._counts, Counter()
        if not counts:
            return {"engine": "ray"}
        return {
            "engine": "ray",
            "nodes": self.cluster()["nodes"],
            "embed_workers": len(self._actors),
            "items_by_worker": dict(sorted(counts.items())),
        }

    def close(self) -> None:
        for actor in self._actors:
            ray.kill(actor, no_restart=True)
        self._actors = []
        if self._connected_here:
            ray.shutdown()
            self._connected_here = False
