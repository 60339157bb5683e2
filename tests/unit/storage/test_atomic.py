from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexfoundry.storage import atomic
from indexfoundry.storage.atomic import atomic_write_jsonl, atomic_write_text, iter_jsonl, link_or_copy


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


def _recorded_syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(atomic, "_sync", lambda path: calls.append("sync"))

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    return calls


def test_writes_inside_deferred_sync_are_synced_once_by_the_next_commit_before_the_commit_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    calls = _recorded_syncs(monkeypatch)
    with atomic.deferred_sync():
        atomic_write_text(tmp_path / "a.txt", "one")
        atomic_write_jsonl(tmp_path / "b.jsonl", [{"b": 1}])
        atomic.sync_filesystem()
        assert calls == []  # nothing synced yet, every rename done
        atomic.atomic_write_commit_json(tmp_path / "manifest.json", {"done": True})
        assert calls == ["sync", "fsync", "fsync"]  # the artifacts, then the commit file and its folder
        calls.clear()
        atomic.atomic_write_commit_json(tmp_path / "manifest.json", {"done": True, "again": 1})
        assert calls == ["fsync", "fsync"]  # nothing pending: no sync
    assert (tmp_path / "a.txt").read_text() == "one"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.jsonl", "manifest.json"]


def test_writes_outside_deferred_sync_fsync_each_file_and_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    calls = _recorded_syncs(monkeypatch)
    atomic_write_text(tmp_path / "a.txt", "one")
    assert calls == ["fsync", "fsync"]


def test_link_or_copy_links_when_it_can_and_replaces_whole(tmp_path: Path):
    source = tmp_path / "base" / "a.txt"
    source.parent.mkdir()
    source.write_bytes(b"same bytes")
    target = tmp_path / "run" / "a.txt"
    link_or_copy(source, target)
    assert target.read_bytes() == b"same bytes" and os.path.samefile(source, target)
    link_or_copy(source, target)  # already that file: nothing to do
    other = tmp_path / "run" / "b.txt"
    other.write_bytes(b"old")
    link_or_copy(source, other)  # an existing name is replaced, never written in place
    assert other.read_bytes() == b"same bytes" and os.path.samefile(source, other)
    assert not list((tmp_path / "run").glob(".*.tmp"))


def test_link_or_copy_copies_where_links_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    source = tmp_path / "a.txt"
    source.write_bytes(b"bytes")

    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_links)
    target = tmp_path / "run" / "a.txt"
    link_or_copy(source, target)
    assert target.read_bytes() == b"bytes" and not os.path.samefile(source, target)


def test_the_pretty_json_is_the_json_modules_byte_for_byte():
    import json

    from indexfoundry.storage.atomic import dump_json

    values = [
        {"b": [1, 2.5, {"c": None, "é": "ü\u2028\x01"}], "a": {}, "e": [], "f": -0.0, "t": True},
        {"tiny": 1e-7, "huge": 1e300, "big": 2**70},
        {"deep": [["a", ["b", [1e17]]]], "keys": {"x": {1: "int key"}}},
        [{"path": f"raw/{n}.md", "sha256": "0" * 64, "records": n} for n in range(50)] + [[2**64]],
        {"lone surrogate": "\ud800"},
        [],
        "text",
    ]
    for value in values:
        expected = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        assert dump_json(value) == expected
    with pytest.raises(ValueError):
        dump_json({"nan": float("nan")})


def test_json_is_read_as_the_json_module_reads_it():
    import json

    from indexfoundry.storage.atomic import loads_json

    texts = [
        '{"a": 1, "b": [1.5, -0.0, 1e-7, 12345678901234567890], "c": null, "d": "\\u00e9\\u2028"}',
        '{"big": 123456789012345678901234567890, "nan": NaN, "inf": -Infinity, "huge": 1e400}',
        '{"lone": "\\ud800", "dup": 1, "dup": 2}',
        "[]",
        '"text"',
    ]
    for text in texts:
        assert repr(loads_json(text)) == repr(json.loads(text))
    with pytest.raises(ValueError):
        loads_json('{"cut": ')
