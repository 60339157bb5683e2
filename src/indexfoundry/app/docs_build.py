"""Docs mode's first build as queries see it while it runs (``FirstBuild``).

A docs folder with no earlier run has nothing to answer from until its first build completes.
Instead of waiting for all of it, a search answers from what the build has already committed:
keyword search once the normalize phase has written the chunks, semantic search over the
vectors embedded so far, hybrid once all are (``retrieval/building.py``). The build's progress is kept
here and fanned out to listeners (an MCP call waiting for the chunks streams it to its client
as progress notifications) besides the server's own reporter (stderr). The build itself is the
ordinary pipeline run: its artifacts are those of any run of the same config, and it becomes
the folder's run only when it completes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from indexfoundry.app.handles import Run
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.retrieval import RetrievalProfile, SearchRequest, SearchResponse, SearchResult
from indexfoundry.phases.base import NullProgress
from indexfoundry.retrieval.budget import TokenCounter, counter_for, page_search
from indexfoundry.retrieval.building import PartialIndex, chunks_committed
from indexfoundry.retrieval.pages import RunView
from indexfoundry.storage.layout import RunLayout

Listener = Callable[[str], None]


@dataclass(frozen=True)
class BuildingPage:
    """One page of a search answered while the first build runs."""

    response: SearchResponse
    first_rank: int


class _Task:
    def __init__(self, build: FirstBuild, description: str, total: int | None, inner: Any) -> None:
        self.build = build
        self.description = description
        self.total = total
        self.done = 0
        self.inner = inner

    def advance(self, amount: int = 1) -> None:
        self.done += amount
        self.inner.advance(amount)
        self.build.report(self)

    def message(self) -> str:
        return f"{self.description} {self.done}/{self.total}" if self.total is not None else self.description


class FirstBuild:
    """The run a docs folder's first build is making: its progress, and a partial index of it
    once its chunks are committed."""

    def __init__(self, layout: RunLayout, folder: str, progress: Any = None, embedder: Any = None) -> None:
        self.layout = layout
        self.folder = folder
        self.inner = progress or NullProgress()
        self.embedder = embedder
        self.started = time.monotonic()
        self.state = "starting"
        self.finished = False
        self._partial: PartialIndex | None = None
        self._listeners: list[Listener] = []
        self._changed = threading.Condition()
        self._making = threading.Lock()

    @property
    def run_id(self) -> str:
        return self.layout.run_id

    # ------------------------------------------------------------- the progress protocol
    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_Task]:
        with self.inner.task(description, total) as inner:
            task = _Task(self, description, total, inner)
            self.report(task, f"{description}: started")
            try:
                yield task
            finally:
                self.report(task, f"{description}: done")

    def report(self, task: _Task, message: str | None = None) -> None:
        text = message or task.message()
        with self._changed:
            self.state = text
            listeners = list(self._listeners)
            self._changed.notify_all()
        for listener in listeners:
            listener(text)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Hear every progress step (until the returned function is called)."""
        with self._changed:
            self._listeners.append(listener)

        def stop() -> None:
            with self._changed:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def finish(self) -> None:
        with self._changed:
            self.finished = True
            self._changed.notify_all()

    # ------------------------------------------------------------- answering meanwhile
    def partial(self) -> PartialIndex | None:
        """The partial index, once the chunks are committed (None before)."""
        if self._partial is None and chunks_committed(self.layout):
            with self._making:  # one BM25 build, however many searches come at once
                if self._partial is None:
                    try:
                        self._partial = PartialIndex(self.layout, self.embedder)
                    except (IndexFoundryError, OSError, ValueError):
                        return None
        return self._partial

    def wait_searchable(self) -> BuildingRun | None:
        """What a search reads, as soon as the chunks are committed; None when the build ended
        before (the caller then reads the finished run)."""
        while True:
            found = self.partial()
            if found is not None:
                return BuildingRun(self, found)
            with self._changed:
                if self.finished:
                    return None
                # Progress steps wake this; the commit of the chunks comes without one.
                self._changed.wait(timeout=0.25)

    def reader(self) -> Run | None:
        """A handle on the run being built, to read its pages (not to search it), once its
        chunks are committed (None before: the caller waits for the build)."""
        found = self.partial()
        if found is None:
            return None
        counter = counter_for(found.embedder().model_id)
        return Run(self.layout.runs_dir, self.run_id, embedder=self.embedder, token_counter=counter)

    def note(self) -> str:
        """What the first text block of an answer says while the build runs."""
        return (
            f"The index of {self.folder} is still building (first build, "
            f"for {time.monotonic() - self.started:.0f}s, now: {self.state}); this answer is from what it "
            "has indexed so far."
        )


class BuildingRun:
    """What search_docs reads while the first build runs: the shape of a ``Run``'s search."""

    def __init__(self, build: FirstBuild, index: PartialIndex) -> None:
        self.build = build
        self.index = index
        self.id = index.run_id
        self.indexed_at: str | None = None
        self.pages = RunView(index.layout)  # page paths as the finished run will have them

    @property
    def profile(self) -> RetrievalProfile:
        return self.index.profile

    @property
    def token_counter(self) -> TokenCounter:
        return counter_for(self.index.embedder().model_id)

    def search_page(self, request: SearchRequest, *, cost: Callable[[SearchResult], int]) -> BuildingPage:
        """The best results that fit ``request.max_tokens``; never a cursor (the ranking changes as
        vectors land)."""
        response = self.index.search(request.query, request.mode, request.top_k)
        whole = request.model_copy(update={"cursor": None})
        page, used, rest = page_search(whole, response.results, self.id, cost)
        response.results = page
        response.tokens = used
        if rest is not None:
            response.warnings.append("more results fit no budget while the index builds: search again when it is built")
        return BuildingPage(response, 1)
