"""Files made once: the first finished file stays, a second writer never replaces it, and
processes making the same file under the lock make it once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from indexfoundry.storage.once import exclusive, lock_path, publish_once


def _finished(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def test_the_first_finished_file_stays_and_the_temp_names_are_gone(tmp_path: Path) -> None:
    target = tmp_path / "model.onnx"
    assert publish_once(_finished(tmp_path, ".a.tmp", b"first export"), target) is True
    assert publish_once(_finished(tmp_path, ".b.tmp", b"second export, other bytes"), target) is False
    assert target.read_bytes() == b"first export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


def _make(target: str, marker: str) -> None:
    """What a process making a shared file does: under the lock, make it unless it is there."""
    path = Path(target)
    with exclusive(lock_path(path)):
        if path.exists():
            return
        finished = _finished(path.parent, f".tmp-{marker}", f"made by {marker}".encode())
        with open(path.parent / "makers.log", "a", encoding="utf-8") as log:
            log.write(marker + "\n")
        publish_once(finished, path)


def test_processes_making_the_same_file_at_once_make_it_once(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "model.onnx"
    target.parent.mkdir()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_make, args=(str(target), f"p{i}")) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    makers = (target.parent / "makers.log").read_text(encoding="utf-8").split()
    assert len(makers) == 1
    assert target.read_text(encoding="utf-8") == f"made by {makers[0]}"
    assert not list(target.parent.glob(".tmp-*"))
