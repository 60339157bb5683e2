"""The executor seam (``pipeline/executors.py``): the in-process executor and how an engine is opened."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import ExecutionConfig
from indexfoundry.phases.executor import Executor, LocalExecutor
from indexfoundry.pipeline.executors import open_executor


def test_the_local_executor_returns_results_in_item_order_and_reports_each_as_it_finishes():
    seen: list[tuple[int, str]] = []
    executor = LocalExecutor()
    results = executor.map(str.upper, ["b", "a", "c"], on_result=lambda index, result: seen.append((index, result)))
    assert results == ["B", "A", "C"]
    assert seen == [(0, "B"), (1, "A"), (2, "C")]


def test_every_kind_of_work_runs_the_same_way_in_process():
    executor = LocalExecutor()
    for kind in ("document", "embed", "store"):
        assert executor.map(lambda n: n * 2, [1, 2, 3], kind=kind) == [2, 4, 6]  # type: ignore[arg-type]


def test_mapping_no_items_calls_nothing():
    calls: list[object] = []
    assert LocalExecutor().map(calls.append, [], on_result=lambda i, r: calls.append(i)) == []
    assert calls == []


def test_a_failing_item_stops_the_map_after_the_items_before_it_were_reported():
    seen: list[int] = []

    def fn(n: int) -> int:
        if n == 2:
            raise ValueError("bad item")
        return n

    with pytest.raises(ValueError, match="bad item"):
        LocalExecutor().map(fn, [0, 1, 2, 3], on_result=lambda index, result: seen.append(index))
    assert seen == [0, 1]


def test_the_local_executor_is_in_process_and_reports_the_cpu_and_nothing_else():
    executor = LocalExecutor()
    assert isinstance(executor, Executor)
    assert executor.name == "local" and executor.remote is False
    assert executor.report() == {}
    assert executor.embedding_device(object()) == "cpu"
    assert executor.embedding_devices() == []
    executor.close()


def test_the_default_execution_config_opens_the_local_executor():
    assert isinstance(open_executor(ExecutionConfig()), LocalExecutor)


def test_an_engine_the_config_does_not_know_is_refused():
    with pytest.raises(IndexFoundryError) as error:
        open_executor(ExecutionConfig.model_construct(engine="dask"))  # type: ignore[arg-type]
    assert error.value.code == "CONFIG_INVALID"
    with pytest.raises(ValidationError):
        ExecutionConfig.model_validate({"engine": "dask"})
