"""Broken and oversized files — invalid or mixed encodings, NUL bytes, empty files of every
type, a 200 MB single-line file, a 50 MB HTML page, a CSV with a million columns, a file that
changes while it is read — fail alone with an error code (or extract harmlessly), in bounded
time and memory, and the run goes on."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.phases import connect as connect_phase
from indexfoundry.storage.layout import RunLayout
from tests.figures import documented
from tests.hostile.support import MB, hostile_config, run_pipeline_measured

GOOD = "# Good\n\nA normal document that must still be indexed after the broken ones.\n"


@pytest.mark.slow
def test_broken_encodings_nul_bytes_and_empty_files_fail_alone_and_the_run_goes_on(
    tmp_path: Path, runs_dir: Path, update_figures: bool
):
    seconds = 180
    rss_mb = 700
    documented("hostile.encodings.seconds", seconds, update=update_figures)
    documented("hostile.encodings.rss_mb", rss_mb, update=update_figures)
    folder = tmp_path / "docs"
    folder.mkdir()
    files: dict[str, bytes] = {
        "good.md": GOOD.encode(),
        "invalid-utf8.md": b"# Title\n\nvalid start \xc3\x28 \xa0\xa1 \xf0\x28\x8c\xbc \xff\xfe end\n" * 50,
        "mixed.txt": ("caf\u00e9 in UTF-8\n".encode() + "caf\u00e9 in Latin-1\n".encode("latin-1")) * 100
        + "\u65e5\u672c\u8a9e\n".encode("shift_jis") * 50,
        "nul.md": b"# Nul\n\nbefore\x00\x00\x00after\x00 text with NULs in the middle of it\n" * 20,
        "nul-only.txt": b"\x00" * 4096,
        "empty.md": b"",
        "empty.txt": b"",
        "empty.html": b"",
        "empty.pdf": b"",
        "empty.docx": b"",
        "empty.csv": b"",
        "empty.json": b"",
        "truncated.pdf": b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog",
        "truncated.docx": b"PK\x03\x04\x14\x00\x00\x00",
        "bad.json": b'{"a": [1, 2, {"b": ',
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    result = run_pipeline_measured(hostile_config(folder), tmp_path, runs_dir)
    codes = result.codes()
    assert result.status == "partial"
    assert result.chunks > 0
    assert "docs/good.md" not in codes
    assert set(codes.values()) <= {"PARSE_ERROR", "EMPTY_CONTENT"}, codes
    for name in ("empty.md", "empty.txt", "nul-only.txt", "truncated.pdf", "bad.json"):
        assert f"docs/{name}" in codes, (name, codes)
    # Every extracted text is valid UTF-8 without NULs (they would poison every later phase).
    for path in (runs_dir / result.run_id / "extracted").glob("*.txt"):
        text = path.read_bytes().decode("utf-8")
        assert "\x00" not in text, path
    assert result.seconds < seconds
    assert result.peak_rss_mb < rss_mb


@pytest.mark.slow
def test_a_200_mb_single_line_file_is_file_too_large_without_being_read(
    tmp_path: Path, runs_dir: Path, update_figures: bool
):
    seconds = 60
    over_mb = 150
    documented("hostile.big_file.seconds", seconds, update=update_figures)
    documented("hostile.big_file.rss_over_baseline_mb", over_mb, update=update_figures)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    with (folder / "huge.txt").open("wb") as handle:
        block = b"a" * MB
        for _ in range(200):
            handle.write(block)
    baseline_folder = tmp_path / "baseline" / "docs"
    baseline_folder.mkdir(parents=True)
    (baseline_folder / "good.md").write_text(GOOD)
    baseline = run_pipeline_measured(hostile_config(baseline_folder), tmp_path / "baseline", runs_dir)
    result = run_pipeline_measured(hostile_config(folder), tmp_path, runs_dir)
    assert result.codes() == {"docs/huge.txt": "FILE_TOO_LARGE"}
    assert result.status == "partial" and result.chunks > 0
    assert result.seconds < seconds
    # The 200 MB are never loaded: peak memory stays within ``over_mb`` MB of the same run without the file.
    assert result.peak_rss_mb < baseline.peak_rss_mb + over_mb, (result.peak_rss_mb, baseline.peak_rss_mb)
    assert not [p for p in (runs_dir / result.run_id / "raw").iterdir() if p.stat().st_size > MB]


@pytest.mark.slow
def test_a_50_mb_html_page_and_a_million_column_csv_are_extracted_or_stopped_at_the_limits(
    tmp_path: Path, runs_dir: Path, update_figures: bool
):
    seconds = 420
    rss_mb = 1500
    documented("hostile.html_csv.seconds", seconds, update=update_figures)
    documented("hostile.html_csv.rss_mb", rss_mb, update=update_figures)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    with (folder / "big.html").open("wb") as handle:
        handle.write(b"<html><head><title>Big</title></head><body>")
        cell = b'<div class="c"><span>w</span></div>'
        for _ in range(50 * MB // (len(cell) * 1000)):
            handle.write(cell * 1000)
        handle.write(b"</body></html>")
    columns = 1_000_000
    header = ",".join(f"c{i}" for i in range(columns))
    row = ",".join("1" for _ in range(columns))
    (folder / "wide.csv").write_text(header + "\n" + row + "\n")
    result = run_pipeline_measured(
        hostile_config(folder, timeout_s=45, memory_mb=1024, workers=1), tmp_path, runs_dir, timeout=600
    )
    codes = result.codes()
    assert "docs/good.md" not in codes
    # Each fails alone: at extraction (PARSE_ERROR) or, once extracted, at chunking under the same limits.
    assert set(codes.values()) <= {"PARSE_ERROR", "CHUNK_ERROR"}, codes
    assert result.status in {"completed", "partial"}
    assert result.chunks > 0
    assert result.seconds < seconds
    assert result.peak_rss_mb < rss_mb


def test_a_file_that_grows_past_the_size_limit_after_the_scan_is_not_copied_whole(
    tmp_path: Path, runs_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    growing = folder / "growing.md"
    growing.write_text("# Small\n\nsmall when scanned\n")
    real_scan = connect_phase.scan_folder

    def scan_then_grow(source):  # type: ignore[no-untyped-def]
        scan = real_scan(source)
        with growing.open("ab") as handle:  # another process appends between the scan and the copy
            handle.write(b"x" * (3 * MB))
        return scan

    monkeypatch.setattr(connect_phase, "scan_folder", scan_then_grow)
    config = hostile_config(folder, workers=0)
    config["connect"]["sources"][0]["max_file_size_mb"] = 1
    out = api.pipeline_run(config, runs_dir=runs_dir)
    layout = RunLayout(runs_dir / out.run_id)
    errors = [json.loads(line) for line in layout.errors_log.read_text().splitlines()]
    assert [(e["uri"], e["code"]) for e in errors] == [("docs/growing.md", "FILE_TOO_LARGE")]
    assert all(p.stat().st_size <= MB for p in layout.raw_dir.iterdir())


def test_a_file_rewritten_while_being_copied_is_stored_under_the_hash_of_the_bytes_copied(
    tmp_path: Path, runs_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    changing = folder / "changing.md"
    changing.write_text("# Before\n\nThe content the scan saw, hashed before the copy.\n")
    real_scan = connect_phase.scan_folder

    def scan_then_change(source):  # type: ignore[no-untyped-def]
        scan = real_scan(source)
        changing.write_text("# After\n\nThe content written after the scan, the one actually copied.\n")
        return scan

    monkeypatch.setattr(connect_phase, "scan_folder", scan_then_change)
    out = api.pipeline_run(hostile_config(folder, workers=0), runs_dir=runs_dir)
    assert out.status == "completed"
    layout = RunLayout(runs_dir / out.run_id)
    for line in layout.raw_manifest.read_text().splitlines():
        record = json.loads(line)
        stored = (layout.root / record["path"]).read_bytes()
        assert hashlib.sha256(stored).hexdigest() == record["sha256"]  # name, manifest and bytes agree
        assert record["size_bytes"] == len(stored)
    texts = "".join(p.read_text() for p in layout.extracted_dir.glob("*.txt"))
    assert "actually copied" in texts and "the scan saw" not in texts


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_like_a_document_never_blocks_the_scan(tmp_path: Path, runs_dir: Path, update_figures: bool):
    seconds = 60
    documented("hostile.fifo.seconds", seconds, update=update_figures)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    os.mkfifo(folder / "pipe.md")  # opening it for reading would block forever: nobody writes
    result = run_pipeline_measured(hostile_config(folder), tmp_path, runs_dir, timeout=120)
    assert result.status == "completed"
    assert result.seconds < seconds
