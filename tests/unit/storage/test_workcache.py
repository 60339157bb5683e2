"""The runs folder's work cache: (kind, key) -> JSON, shared by runs and processes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from indexfoundry.storage.workcache import WorkCache


def _put(path: str, n: int) -> None:
    with WorkCache(Path(path)) as cache:
        cache.put_many("k", {f"key{i}": {"n": i, "from": n} for i in range(50)})


def test_values_round_trip_none_is_a_value_and_kinds_are_apart(tmp_path: Path):
    with WorkCache.for_runs(tmp_path) as cache:
        assert cache.path == tmp_path / ".cache" / "work.sqlite"
        cache.put_many("language/a", {"h1": "en", "h2": None})
        cache.put_many("language/b", {"h1": "fr"})
        assert cache.get_many("language/a", ["h1", "h2", "h3"]) == {"h1": "en", "h2": None}
        assert cache.get_many("language/b", ["h1", "h2"]) == {"h1": "fr"}
        cache.put_many("language/a", {})
    with WorkCache.for_runs(tmp_path) as again:  # persisted
        assert again.get_many("language/a", ["h2"]) == {"h2": None}
        assert again.get_many("language/a", [f"x{i}" for i in range(1200)] + ["h1"]) == {"h1": "en"}


def test_two_processes_writing_at_once_leave_a_readable_cache(tmp_path: Path):
    path = tmp_path / "work.sqlite"
    WorkCache(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_put, args=(str(path), n)) for n in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    with WorkCache(path) as cache:
        found = cache.get_many("k", [f"key{i}" for i in range(50)])
    assert len(found) == 50 and all(v["n"] == int(k[3:]) for k, v in found.items())
