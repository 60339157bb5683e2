"""The persistent pool of limited worker processes (phases/isolation.py) and the local executor
that owns it: workers are started once and reused, and every limit still holds in them."""

from __future__ import annotations

import os
import signal

from indexfoundry.phases.executor import LOCAL, LocalExecutor
from indexfoundry.phases.isolation import IsolationPool, Limits, Stopped
from tests.isolation_jobs import allocate_mb, pid_of_worker, result_that_cannot_be_sent, sleep_then_pid
from tests.waiting import wait_for

LIMITS = Limits(workers=1, timeout_s=20, memory_mb=256)


def test_a_pool_runs_later_calls_in_the_worker_it_already_started():
    pool = IsolationPool()
    try:
        first = pool.run([1, 2], pid_of_worker, LIMITS)
        second = pool.run([3], pid_of_worker, LIMITS)
    finally:
        pool.close()
    assert [job for job, _ in [*first, *second]] == [1, 2, 3]  # job order kept
    assert len({pid for _, pid in [*first, *second]}) == 1
    assert pool.started == 1
    assert pool.idle_pids() == []  # closed


def test_a_job_past_the_time_limit_in_a_warm_pool_is_stopped_and_the_next_job_gets_a_new_worker():
    pool = IsolationPool()
    try:
        (warm,) = pool.run([0.0], sleep_then_pid, LIMITS)
        stopped, after = pool.run([60.0, 0.0], sleep_then_pid, Limits(1, 3.0, 256))
    finally:
        pool.close()
    assert isinstance(stopped, Stopped) and stopped.limit == "time"
    assert isinstance(after, int) and after != warm  # the killed worker was replaced
    assert pool.started == 2


def test_an_idle_worker_that_died_is_never_given_a_job():
    pool = IsolationPool()
    try:
        (first,) = pool.run([0.0], sleep_then_pid, LIMITS)
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: not (pool.idle_pids() and _alive(first)), timeout=10, interval=0.02)
        (second,) = pool.run([0.0], sleep_then_pid, LIMITS)
    finally:
        pool.close()
    assert isinstance(second, int) and second != first  # a result, not a Stopped for the dead worker


def test_the_memory_limit_holds_in_a_reused_worker_and_a_worker_that_grew_retires():
    limits = Limits(workers=1, timeout_s=20, memory_mb=1024)
    pool = IsolationPool()
    try:
        (over,) = pool.run([4096], allocate_mb, limits)  # four times the limit
        (small,) = pool.run([1], allocate_mb, limits)
        (grown,) = pool.run([300], allocate_mb, limits)  # more than a quarter of the limit, held
        (after,) = pool.run([1], allocate_mb, limits)
    finally:
        pool.close()
    assert not isinstance(over, Stopped) and over[0] == "memory error"
    assert small == ("held", over[1])  # the same worker, its limit intact
    assert grown == ("held", over[1])
    assert not isinstance(after, Stopped) and after[0] == "held" and after[1] != grown[1]  # it retired
    assert pool.started == 2


def test_a_worker_that_runs_out_of_memory_outside_its_job_exits_at_once_and_the_job_is_stopped():
    """A MemoryError that escapes the worker's loop (here: sending the result) ends the process
    with exit code 70 instead of running multiprocessing's exit handlers, which can spin for
    minutes at the address space limit; the job is a Stopped, the next one gets a new worker."""
    pool = IsolationPool()
    try:
        stopped, after = pool.run([1, 2], result_that_cannot_be_sent, LIMITS)
        (next_job,) = pool.run([3], pid_of_worker, LIMITS)
    finally:
        pool.close()
    assert isinstance(stopped, Stopped) and stopped.limit == "memory" and "exit code 70" in stopped.reason
    assert isinstance(after, Stopped) and "exit code 70" in after.reason
    assert next_job[0] == 3
    assert pool.started == 3


def test_the_local_executor_keeps_its_pool_between_maps_and_close_stops_the_workers():
    executor = LocalExecutor()
    seen: list[int] = []
    first = executor.map_limited(pid_of_worker, [1], LIMITS, on_result=lambda index, result: seen.append(index))
    second = executor.map_limited(pid_of_worker, [2], LIMITS)
    pids = executor.pool.idle_pids()
    executor.close()
    assert first[0] == (1, pids[0]) and second[0] == (2, pids[0])
    assert seen == [0]
    assert executor.pool.started == 1
    wait_for(lambda: not _alive(pids[0]), timeout=10, interval=0.02)
    assert not _alive(pids[0])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


def test_the_executor_of_a_phase_nobody_opened_one_for_starts_workers_per_call_and_keeps_none():
    seen: list[int] = []
    (first,) = LOCAL.map_limited(pid_of_worker, [1], LIMITS, on_result=lambda index, result: seen.append(index))
    (second,) = LOCAL.map_limited(pid_of_worker, [2], LIMITS)
    assert LOCAL.keep_workers is False and LOCAL._pool is None  # nothing kept between calls
    assert first[0] == 1 and second[0] == 2 and first[1] != second[1]  # a worker of its own each call
    assert seen == [0]
    assert wait_for(lambda: not _alive(first[1]) and not _alive(second[1]), timeout=10, interval=0.02)
