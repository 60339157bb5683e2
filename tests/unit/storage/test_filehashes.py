"""File hashes known by stat: an unchanged file is not read again, a changed one always is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexfoundry.storage import filehashes
from indexfoundry.storage.filehashes import FileHashes, file_sha256, file_sha256_many, known_file_hashes
from indexfoundry.storage.hashing import sha256_bytes
from indexfoundry.storage.workcache import WorkCache

OLD_NS = 1_600_000_000 * 10**9  # a modification time long past: not racy


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = filehashes.sha256_file

    def counting(path: Path, *args: object) -> str:
        seen.append(Path(path))
        return real(path)

    monkeypatch.setattr(filehashes, "sha256_file", counting)
    return seen


def _old_file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    os.utime(path, ns=(OLD_NS, OLD_NS))
    return path


def test_an_unchanged_file_is_read_once_and_a_changed_one_again(tmp_path: Path, reads: list[Path]):
    a = _old_file(tmp_path / "a.txt", b"alpha")
    with WorkCache.for_runs(tmp_path / "runs") as cache:
        hashes = FileHashes(cache)
        assert hashes.many([a, tmp_path / "missing"]) == [sha256_bytes(b"alpha"), None]
        assert hashes.many([a]) == [sha256_bytes(b"alpha")]
        assert reads == [a]
        a.write_bytes(b"omega")  # same size, same inode
        os.utime(a, ns=(OLD_NS + 1, OLD_NS + 1))  # any change of the modification time is seen
        assert hashes.many([a]) == [sha256_bytes(b"omega")]
        assert reads == [a, a]


def test_a_hard_link_shares_the_entry_and_a_copy_does_not(tmp_path: Path, reads: list[Path]):
    a = _old_file(tmp_path / "a.txt", b"alpha")
    with WorkCache.for_runs(tmp_path / "runs") as cache:
        hashes = FileHashes(cache)
        hashes.many([a])
        os.link(a, tmp_path / "b.txt")
        copy = _old_file(tmp_path / "c.txt", b"alpha")
        assert hashes.many([tmp_path / "b.txt", copy]) == [sha256_bytes(b"alpha")] * 2
        assert reads == [a, copy]


def test_a_recently_written_file_is_never_remembered(tmp_path: Path, reads: list[Path]):
    fresh = tmp_path / "fresh.txt"
    fresh.write_bytes(b"just now")
    with WorkCache.for_runs(tmp_path / "runs") as cache:
        hashes = FileHashes(cache)
        hashes.many([fresh])
        hashes.many([fresh])
    assert reads == [fresh, fresh]


def test_known_only_inside_the_block(tmp_path: Path, reads: list[Path]):
    a = _old_file(tmp_path / "a.txt", b"alpha")
    with known_file_hashes(tmp_path / "runs"):
        assert file_sha256(a) == sha256_bytes(b"alpha")
        assert file_sha256_many([a]) == [sha256_bytes(b"alpha")]
    assert reads == [a]
    assert file_sha256(a) == sha256_bytes(b"alpha")  # outside: read in full
    assert reads == [a, a]
    with pytest.raises(OSError):
        file_sha256(tmp_path / "missing")


def test_a_cache_that_cannot_be_opened_only_costs_reading(tmp_path: Path, reads: list[Path]):
    a = _old_file(tmp_path / "a.txt", b"alpha")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / ".cache").write_text("not a folder")  # the work cache cannot be created
    with known_file_hashes(runs):
        assert file_sha256_many([a, a]) == [sha256_bytes(b"alpha")] * 2
    assert reads == [a, a]


def test_a_folder_scan_looks_its_hashes_up_in_one_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from indexfoundry.models.config import FolderSource
    from indexfoundry.phases.connect.folder import scan_folder

    folder = tmp_path / "docs"
    for n in range(30):
        (folder / f"part{n % 3}").mkdir(parents=True, exist_ok=True)
        _old_file(folder / f"part{n % 3}" / f"doc{n:02d}.md", f"# Doc {n}\n\nText {n}.\n".encode())
    queries: list[int] = []
    real_get = WorkCache.get_many

    def counted(self: WorkCache, kind: str, keys: object) -> dict[str, object]:
        if kind == filehashes.KIND:  # the file hashes' (the scan asks for its files' sniffed types apart)
            queries.append(1)
        return real_get(self, kind, keys)  # type: ignore[arg-type]

    monkeypatch.setattr(WorkCache, "get_many", counted)
    source = FolderSource(type="folder", path=str(folder), glob="**/*.md")
    with known_file_hashes(tmp_path / "runs"):
        first = scan_folder(source)
        assert len(queries) == 1  # one per scan, not one per file
        again = scan_folder(source)
        assert len(queries) == 1  # the same run asks again: it knows them already
    with known_file_hashes(tmp_path / "runs"):  # the next run
        later = scan_folder(source)
    assert len(queries) == 2
    assert [f.sha256 for f in again.files] == [f.sha256 for f in first.files] == [f.sha256 for f in later.files]
    assert len(first.files) == 30 and first.files[0].sha256 == sha256_bytes(b"# Doc 0\n\nText 0.\n")


def test_a_rescan_takes_each_files_sniffed_type_by_its_hash_and_name_without_opening_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from indexfoundry.models.config import FolderSource
    from indexfoundry.phases.connect import folder as folder_module
    from indexfoundry.phases.connect.folder import scan_folder

    folder = tmp_path / "docs"
    folder.mkdir()
    _old_file(folder / "a.md", b"# A\n\nText.\n")
    _old_file(folder / "page.txt", b"<!doctype html><html><body>a page saved as .txt</body></html>")
    _old_file(folder / "b.md", b"# A\n\nText.\n")  # the same bytes under another name
    source = FolderSource(type="folder", path=str(folder), glob="*")
    opened: list[str] = []
    real_open = Path.open

    def counted_open(self: Path, *args: object, **kwargs: object) -> object:
        if self.parent == folder:
            opened.append(self.name)
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", counted_open)
    with known_file_hashes(tmp_path / "runs"):
        first = scan_folder(source)
    assert sorted(opened) == ["a.md", "b.md", "page.txt"]
    opened.clear()
    with known_file_hashes(tmp_path / "runs"):  # the next run: every type known
        again = scan_folder(source)
    assert opened == []
    types = {f.relative_path: f.content_type for f in again.files}
    assert types == {f.relative_path: f.content_type for f in first.files}
    assert types == {"a.md": "text/markdown", "b.md": "text/markdown", "page.txt": "text/html"}
    # A file whose type is known but that can no longer be read is an error, as before.
    monkeypatch.setattr(folder_module.os, "access", lambda path, mode: not str(path).endswith("a.md"))
    with known_file_hashes(tmp_path / "runs"):
        third = scan_folder(source)
    assert [f.relative_path for f in third.files] == ["b.md", "page.txt"]
    assert [uri for uri, _error in third.errors] == ["docs/a.md"]
