"""Folder sources never leave their root and never block: symlinks out of the root, symlink
loops, FIFOs and device files are skipped; dangling links and odd names (newlines, bytes that
are not UTF-8) are reported or indexed without breaking a JSON artifact."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import pytest

from tests.hostile.support import everything_written, hostile_config, run_pipeline_measured

GOOD = "# Good\n\nA normal document inside the root.\n"
OUTSIDE = "OUTSIDE-THE-ROOT-CANARY-41d2"


@pytest.fixture
def hostile_folder(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{OUTSIDE}\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    os.symlink(outside / "secret.md", folder / "link-out.md")  # file link out of the root
    os.symlink(outside, folder / "dir-out")  # directory link out of the root
    os.symlink("/etc/passwd", folder / "passwd.md")  # absolute link to a system file
    os.symlink(folder / "missing.md", folder / "dangling.md")
    os.symlink(folder / "loop-b.md", folder / "loop-a.md")
    os.symlink(folder / "loop-a.md", folder / "loop-b.md")
    os.symlink("/dev/zero", folder / "zero.md")  # endless device behind a link
    os.mkfifo(folder / "fifo.md")
    # /dev/zero's numbers; without CAP_MKNOD the symlink to /dev/zero covers the case.
    with contextlib.suppress(OSError):
        os.mknod(folder / "device.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    os.symlink(folder / "good.md", folder / "inside-link.md")  # a link inside the root is fine
    return folder


@pytest.mark.slow
def test_links_out_of_the_root_devices_and_fifos_are_never_read(hostile_folder: Path, tmp_path: Path, runs_dir: Path):
    result = run_pipeline_measured(hostile_config(hostile_folder), tmp_path, runs_dir, timeout=120)
    assert result.status in {"completed", "partial"}
    assert result.chunks > 0
    assert result.seconds < 60
    assert result.peak_rss_mb < 1000  # generous: the child imports the whole stack (~450 MB)
    # Links that cannot be resolved are reported, never followed; nothing else is an error.
    assert set(result.codes().values()) <= {"PARSE_ERROR"}
    assert set(result.codes()) <= {"docs/dangling.md", "docs/loop-a.md", "docs/loop-b.md"}
    for path, data in everything_written(runs_dir / result.run_id):
        assert OUTSIDE.encode() not in data, f"{path} holds a file from outside the source root"
        assert b"root:x:0:0" not in data, f"{path} holds /etc/passwd"


@pytest.mark.slow
def test_names_with_newlines_and_bytes_that_are_not_utf8_do_not_break_the_run(tmp_path: Path, runs_dir: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    (folder / "new\nline.md").write_text("# Newline\n\nA file whose name holds a newline.\n")
    raw_name = os.fsencode(str(folder)) + b"/latin1-caf\xe9.md"
    with open(raw_name, "wb") as handle:
        handle.write(b"# Latin-1 name\n\nA file whose name is not valid UTF-8.\n")
    result = run_pipeline_measured(hostile_config(folder), tmp_path, runs_dir, timeout=120)
    assert result.status in {"completed", "partial"}
    assert result.chunks > 0
    assert set(result.codes().values()) <= {"PARSE_ERROR"}
    for path, data in everything_written(runs_dir / result.run_id):
        if path.suffix in {".json", ".jsonl", ".ndjson"}:
            data.decode("utf-8")  # every JSON artifact stays valid UTF-8


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="tests run as root here: chmod 000 does not stop root from reading, so no unreadable file can be built",
)
def test_an_unreadable_file_is_a_parse_error_and_the_run_goes_on(tmp_path: Path, runs_dir: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    locked = folder / "locked.md"
    locked.write_text("# Locked\n\nnobody may read this\n")
    locked.chmod(0)
    try:
        result = run_pipeline_measured(hostile_config(folder), tmp_path, runs_dir, timeout=120)
    finally:
        locked.chmod(0o600)
    assert result.codes() == {"docs/locked.md": "PARSE_ERROR"}
    assert result.status == "partial"
