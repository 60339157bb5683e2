"""The cyclic collector runs rarely while a pipeline executes (``pipeline/gc_policy.py``), and the
process's own thresholds come back after, also when runs overlap on two threads."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.pipeline.gc_policy import THRESHOLDS, fewer_collections
from tests.conftest import folder_config, write_tree
from tests.fakes import RecordingEmbedder

PROCESS_OWN = (900, 11, 12)


@pytest.fixture
def own_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(*PROCESS_OWN)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def test_every_phase_of_a_run_sees_the_runs_thresholds_and_the_process_gets_its_own_back(
    tmp_path: Path, runs_dir: Path, own_thresholds: None
):
    seen: dict[str, tuple[int, int, int]] = {}

    def recording(ctx: Any, phase: Any) -> Any:
        seen[phase.name] = gc.get_threshold()
        return phase.run(ctx)

    docs = write_tree(tmp_path / "docs", {"a.md": "# A\n\nSome text.\n", "b.md": "# B\n\nOther text.\n"})
    run = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder(), phase_runner=recording)
    assert run.status == "completed"
    assert seen == dict.fromkeys(["connect", "extract", "normalize", "index", "serve"], THRESHOLDS)
    assert gc.get_threshold() == PROCESS_OWN


def test_a_failed_run_puts_the_thresholds_back(tmp_path: Path, runs_dir: Path, own_thresholds: None):
    def failing(ctx: Any, phase: Any) -> Any:
        raise RuntimeError("a phase broke")

    docs = write_tree(tmp_path / "docs", {"a.md": "# A\n\nSome text.\n"})
    with pytest.raises(RuntimeError):
        api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder(), phase_runner=failing)
    assert gc.get_threshold() == PROCESS_OWN


def test_overlapping_blocks_on_two_threads_restore_the_process_thresholds_when_the_last_one_ends(
    own_thresholds: None,
):
    first_in, second_done = threading.Event(), threading.Event()
    inside: list[tuple[int, int, int]] = []

    def first() -> None:
        with fewer_collections():
            first_in.set()
            second_done.wait(10)
            inside.append(gc.get_threshold())  # the second block ended first: still the run's

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(10)
    with fewer_collections():
        inside.append(gc.get_threshold())
    second_done.set()
    thread.join(10)
    assert inside == [THRESHOLDS, THRESHOLDS]
    assert gc.get_threshold() == PROCESS_OWN


def test_a_disabled_collector_stays_disabled(own_thresholds: None):
    gc.disable()
    try:
        with fewer_collections():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_a_run_leaves_in_reference_cycles_is_collected_when_it_ends(own_thresholds: None):
    import weakref

    class Node:
        pass

    with fewer_collections():
        node = Node()
        node.self = node  # type: ignore[attr-defined]
        gone = weakref.ref(node)
        del node
    assert gone() is None
