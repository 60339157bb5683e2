"""Test doubles: a deterministic embedder that records every text it is asked to embed."""

from __future__ import annotations

import threading

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.embedding.hashing import HashEmbedder


class RecordingEmbedder(HashEmbedder):
    """The hash embedder, plus a record of every call, so a test can prove what was embedded."""

    def __init__(self, dimensions: int = 384) -> None:
        super().__init__(dimensions)
        self.calls: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]

    def embed(self, texts: list[str]) -> Vectors:
        self.calls.append(list(texts))
        return super().embed(texts)


class FileRecordingEmbedder(HashEmbedder):
    """The hash embedder, recording every text it embeds to a file: it works in worker processes
    (a Ray actor) too, where a test cannot see an object's attributes.

    With ``stall_marker``, the first batch anywhere writes the marker (its process id) and waits
    for the test to kill that process; the batch retried after the kill finds the marker and
    goes on.
    """

    def __init__(self, record: str, stall_marker: str | None = None, dimensions: int = 384) -> None:
        super().__init__(dimensions)
        self.record = record
        self.stall_marker = stall_marker

    def embed(self, texts: list[str]) -> Vectors:
        import json
        import os
        import time
        from pathlib import Path

        if self.stall_marker is not None:
            marker = Path(self.stall_marker)
            try:
                with marker.open("x", encoding="utf-8") as handle:
                    handle.write(str(os.getpid()))
            except FileExistsError:
                pass
            else:
                time.sleep(120)  # killed here by the test
        with open(self.record, "a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(text) + "\n" for text in texts)
        return super().embed(texts)


class GatedEmbedder(RecordingEmbedder):
    """The recording hash embedder whose calls from one thread (a build's) wait at a gate after
    ``open_batches`` batches, until the test opens it; calls from other threads (queries) never
    wait. ``waiting`` is set while a batch waits, so a test knows where the build stands."""

    def __init__(self, thread_name: str, open_batches: int = 0, dimensions: int = 384) -> None:
        super().__init__(dimensions)
        self.thread_name = thread_name
        self.open_batches = open_batches
        self.gate = threading.Event()
        self.waiting = threading.Event()
        self._batches = 0

    def embed(self, texts: list[str]) -> Vectors:
        if threading.current_thread().name == self.thread_name:
            self._batches += 1
            if self._batches > self.open_batches:
                self.waiting.set()
                self.gate.wait(timeout=120)
        return super().embed(texts)
