"""The Ray executor: a run's per-document and per-batch work on a Ray cluster.

The driver (the ``pipeline run`` process) stays the source of truth. It plans from the
manifests, consults the embedding cache, sends only the work that is left, and writes every
artifact itself in canonical order; the cluster only computes. So a Ray run's artifacts are
byte-identical to a local run's.

- Documents (extract, normalize) are Ray tasks, a bounded number in flight. Extraction runs
  inside each task in a limited child process, exactly as locally (``extract.timeout_s``,
  ``extract.memory_mb``), so a hostile file fails alone with the same PARSE_ERROR.
- Embedding batches go to a pool of actors. Each actor keeps the model it loaded for its
  whole life (loaded once per worker), and asks Ray for ``execution.num_gpus`` GPUs: an actor
  given a GPU places the model on it (``backends/embedding/devices.py``), the others stay on
  the CPU path; the phase manifest records each actor's device.
- Store batches of a server store (``takes_concurrent_writers``) are tasks too: workers upsert
  what the driver chose, concurrently; an embedded store is written by the driver only.
- An item whose worker process or node died is sent again by the driver, at most
  ``execution.max_retries`` times per item (a dead actor is restarted as often), and counted
  (``details.executor.retries``); after that the phase fails, recoverable: rerun the run with
  ``--run-id`` to resume it. A driver that dies leaves the run to ``--run-id`` as well.

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

from indexfoundry.backends.embedding.devices import CPU, Device, detect_device
from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.config import ExecutionConfig
from indexfoundry.phases.executor import Executor, WorkKind

T = TypeVar("T")
R = TypeVar("R")


def _node() -> str:
    return str(ray.get_runtime_context().get_node_id())[:12]


def run_document_task(fn: Callable[[Any], Any], item: Any) -> tuple[Any, str]:
    """One document's (or one store batch's) work on a worker; the result and the node it ran on."""
    return fn(item), _node()


@ray.remote
class EmbedWorker:
    """A long-lived embedding worker: what ``fn`` loads (the model) stays loaded across batches,
    on the device this worker was given (``devices.detect_device``: its GPU, else the CPU)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.device = detect_device(ray.get_gpu_ids())

    def run(self, fn: Callable[[Any], Any], item: Any) -> tuple[Any, str, Device]:
        placed = getattr(fn, "placed", None)
        if callable(placed):
            fn = placed(self.device)
        device = getattr(fn, "device", None)
        return fn(item), self.label, device if isinstance(device, Device) else self.device


# A worker process or node that died (or its results lost with it): the item is sent again. An
# exception raised by the item's own code (RayTaskError) is not: it would fail again.
LOST = (
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.NodeDiedError,
    ray.exceptions.RayActorError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.LocalRayletDiedError,
    ray.exceptions.OutOfMemoryError,
)


_WHAT: dict[str, str] = {"document": "document", "embed": "embedding batch", "store": "store batch"}


class _Lost(Exception):
    """An item's worker process or node died; ``reason`` names Ray's error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
        self._counts: Counter[str] = Counter()  # items done, by worker (node or actor)
        self._kinds: Counter[str] = Counter()  # items done, by kind
        self._retries: Counter[str] = Counter()  # items sent again after their worker died, by kind
        self._devices: dict[str, Device] = {}  # where each embedding actor's model ran
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
        return self._map_tasks(fn_ref, items, kind, on_result)

    def _map_tasks(
        self, fn_ref: Any, items: Sequence[Any], kind: WorkKind, on_result: Callable[[int, Any], None] | None
    ) -> list[Any]:
        placement: dict[str, Any] = {"num_cpus": self.config.num_cpus, "name": "indexfoundry-document"}
        if kind == "store":
            # Store batches wait on the server, and the embedding actors still hold their CPUs:
            # no CPU is reserved for them (a task asking for one would wait for ever), spread
            # over the nodes.
            placement = {"num_cpus": 0, "scheduling_strategy": "SPREAD", "name": "indexfoundry-store"}
        task = ray.remote(run_document_task).options(
            max_retries=0,  # sent again by this loop, counted (_retry)
            retry_exceptions=False,
            **placement,
        )
        window = max(4, 2 * max(1, self.cluster()["cpus"]))  # bounded: a million documents are not all sent
        results: list[Any] = [None] * len(items)
        feed = _Feed(items)
        again: deque[int] = deque()  # items whose worker died, to send again
        attempts: Counter[int] = Counter()
        pending: dict[Any, int] = {}
        while feed or again or pending:
            while (feed or again) and len(pending) < window:
                index = again.popleft() if again else feed.next()[0]
                pending[task.remote(fn_ref, items[index])] = index
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                index = pending.pop(ref)
                try:
                    result, where = self._get(ref, kind)
                except _Lost as lost:
                    self._retry(kind, index, attempts, lost)
                    again.append(index)
                    continue
                self._counts[f"node:{where}"] += 1
                self._kinds[kind] += 1
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
        self._actors = [
            EmbedWorker.options(  # type: ignore[attr-defined]
                num_cpus=self.config.num_cpus,
                num_gpus=self.config.num_gpus,
                # A dead actor is restarted (its model loaded again); its batches are sent again
                # by _map_actors, counted.
                max_restarts=self.config.max_retries,
                max_task_retries=0,
            ).remote(f"actor-{number}")
            for number in range(size)
        ]
        return self._actors

    def _map_actors(self, fn_ref: Any, items: Sequence[Any], on_result: Callable[[int, Any], None] | None) -> list[Any]:
        actors = self._pool()
        results: list[Any] = [None] * len(items)
        feed = _Feed(items)
        again: deque[int] = deque()  # items whose worker died, to send again
        attempts: Counter[int] = Counter()
        pending: dict[Any, tuple[int, Any]] = {}
        free = deque(actors * 2)  # two batches per actor: the next one is ready when one finishes
        while feed or again or pending:
            while (feed or again) and free:
                actor = free.popleft()
                index = again.popleft() if again else feed.next()[0]
                pending[actor.run.remote(fn_ref, items[index])] = (index, actor)
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                index, actor = pending.pop(ref)
                free.append(actor)  # a restarted actor takes batches again
                try:
                    result, label, device = self._get(ref, "embed")
                except _Lost as lost:
                    self._retry("embed", index, attempts, lost)
                    again.append(index)
                    continue
                self._counts[label] += 1
                self._kinds["embed"] += 1
                self._devices[label] = device
                results[index] = result
                if on_result is not None:
                    on_result(index, result)
        return results

    def _get(self, ref: Any, kind: WorkKind) -> Any:
        what = _WHAT[kind]
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, IndexFoundryError):
                raise cause from None
            if isinstance(cause, LOST):  # an actor call's own wrapper around a lost worker
                raise _Lost(type(cause).__name__) from None
            raise IndexFoundryError(
                f"a {what} failed on the Ray cluster at {self.address}: {' '.join(str(cause).split())[:300]}",
                code="INTERNAL_ERROR",
                suggestion="Report the problem with this input",
            ) from None
        except LOST as exc:
            raise _Lost(type(exc).__name__) from None
        except ray.exceptions.RayError as exc:
            raise IndexFoundryError(
                f"a {what} failed on the Ray cluster at {self.address}: {type(exc).__name__}",
                code="INTERNAL_ERROR",
                recoverable=True,
                suggestion="Check the cluster's nodes, then rerun with --run-id to resume the run",
                details={"address": self.address},
            ) from None

    def _retry(self, kind: WorkKind, index: int, attempts: Counter[int], lost: _Lost) -> None:
        """A worker died under item ``index``: count the retry (the caller sends the item again),
        or fail the phase, recoverable, once the item was retried ``max_retries`` times."""
        attempts[index] += 1
        if attempts[index] > self.config.max_retries:
            what = _WHAT[kind]
            raise IndexFoundryError(
                f"a {what} was lost on the Ray cluster at {self.address} after "
                f"{self.config.max_retries} retries: {lost.reason}",
                code="INTERNAL_ERROR",
                recoverable=True,
                suggestion="Check the cluster's nodes, then rerun with --run-id to resume the run",
                details={"address": self.address},
            ) from None
        self._retries[kind] += 1

    # ---------------------------------------------------------------- report, close
    def embedding_device(self, embedder: Any) -> str:
        """``cuda`` when embedding actors ask for GPUs and the embedder has a model to place on
        one (the embedding cache then keeps their vectors apart from CPU vectors), else ``cpu``."""
        placeable = callable(getattr(embedder, "on_device", None))
        return "cuda" if self.config.num_gpus > 0 and placeable else "cpu"

    def embedding_devices(self) -> list[str]:
        """The devices the embedding actors ran their model on, since the last report."""
        return sorted({device.label for device in self._devices.values()})

    def report(self) -> dict[str, Any]:
        """``details.executor``: items done per worker and per kind, items sent again after their
        worker died (per kind), and where each embedding actor's model ran (with the reason when
        a GPU it was given could not be used). Reset after each phase."""
        counts, kinds, retries, devices = self._counts, self._kinds, self._retries, self._devices
        self._counts, self._kinds, self._retries, self._devices = Counter(), Counter(), Counter(), {}
        if not counts and not retries:
            return {"engine": "ray"}
        out: dict[str, Any] = {
            "engine": "ray",
            "nodes": self.cluster()["nodes"],
            "embed_workers": len(self._actors),
            "items_by_worker": dict(sorted(counts.items())),
            "items_by_kind": dict(sorted(kinds.items())),
            "retries": sum(retries.values()),
            "retries_by_kind": dict(sorted(retries.items())),
        }
        if devices:
            out["devices"] = {label: device.label for label, device in sorted(devices.items())}
            # Why an actor is on the CPU though it was given a GPU (or has nothing to place on one).
            notes = {label: d.reason for label, d in sorted(devices.items()) if d.kind == "cpu" and d != CPU}
            if notes:
                out["device_notes"] = notes
        return out

    def close(self) -> None:
        for actor in self._actors:
            ray.kill(actor, no_restart=True)
        self._actors = []
        if self._connected_here:
            ray.shutdown()
            self._connected_here = False
