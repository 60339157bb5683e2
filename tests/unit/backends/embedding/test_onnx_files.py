"""The local model's files are made once per machine: processes asking for a missing file at
the same time make it once and all get that file, and a file in place is never replaced
(an export is not byte-identical when redone, and the model id names the file by its hash)."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path

from indexfoundry.backends.embedding.onnx_files import file_sha256, make_once, sidecar
from indexfoundry.storage.hashing import sha256_file


def _export(marker: str, log: Path) -> Callable[[Path], dict[str, str]]:
    """What an export does, with bytes that differ per process (as a real export's may)."""

    def make(out: Path) -> dict[str, str]:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(marker + "\n")
        out.write_bytes(f"onnx graph exported by {marker}".encode())
        return {"sha256": sha256_file(out), "recipe": "test-recipe"}

    return make


def _ask(target: str, marker: str) -> None:
    path = Path(target)
    got = make_once(path, _export(marker, path.parent / "exports.log"))
    (path.parent / f"{marker}.got").write_text(file_sha256(got), encoding="utf-8")


def test_processes_asking_at_once_export_once_and_all_name_the_same_file(tmp_path: Path) -> None:
    target = tmp_path / "onnx" / "model.onnx"
    context = multiprocessing.get_context("spawn")
    askers = [context.Process(target=_ask, args=(str(target), f"p{i}")) for i in range(4)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(timeout=120)
        assert asker.exitcode == 0
    exports = (target.parent / "exports.log").read_text(encoding="utf-8").split()
    assert len(exports) == 1
    digest = sha256_file(target)
    assert {(target.parent / f"p{i}.got").read_text(encoding="utf-8") for i in range(4)} == {digest}
    record = json.loads(sidecar(target).read_text(encoding="utf-8"))
    assert record == {"sha256": digest, "recipe": "test-recipe", "size": target.stat().st_size}
    assert not [p.name for p in target.parent.iterdir() if p.name.startswith(".make-")]


def test_a_file_in_place_is_never_made_again(tmp_path: Path) -> None:
    target = tmp_path / "model.onnx"
    log = tmp_path / "exports.log"
    first = make_once(target, _export("first", log))
    before = sha256_file(first)
    assert make_once(target, _export("second", log)) == target
    assert sha256_file(target) == before
    assert log.read_text(encoding="utf-8").split() == ["first"]
