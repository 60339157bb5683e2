from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry.storage.atomic import atomic_write_jsonl, atomic_write_text, iter_jsonl


def test_atomic_write_replaces_the_file_and_leaves_no_temp_files(tmp_path: Path):
    target = tmp_path / "out" / "a.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.txt"]


def test_a_failed_write_keeps_the_old_file_whole(tmp_path: Path):
    target = tmp_path / "rows.jsonl"
    atomic_write_jsonl(target, [{"a": 1}])

    def rows():
        yield {"a": 2}
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        atomic_write_jsonl(target, rows())
    assert list(iter_jsonl(target)) == [{"a": 1}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]


def test_jsonl_rows_are_canonical(tmp_path: Path):
    target = tmp_path / "rows.jsonl"
    atomic_write_jsonl(target, [{"b": 1, "a": [1, 2]}])
    assert target.read_text() == '{"a":[1,2],"b":1}\n'
