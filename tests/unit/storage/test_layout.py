"""The run layout (``storage/layout.py``): run ids, prefixes, the runs folder, paths kept inside a run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexfoundry.errors import ConfigInvalid, IndexFoundryError, RunNotFound
from indexfoundry.storage.layout import (
    ENV_RUNS_DIR,
    PHASE_DIRS,
    PHASES,
    RunLayout,
    cache_dir,
    inuse_dir,
    is_run_id,
    locks_dir,
    resolve_runs_dir,
    server_pid_file,
    servers_dir,
)

RUN_ID = "01a230de-0000-7000-8000-000000000001"


def _run(runs: Path, run_id: str) -> None:
    (runs / run_id).mkdir(parents=True)
    (runs / run_id / "manifest.json").write_text("{}")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (RUN_ID, True),
        (RUN_ID.upper(), False),
        (RUN_ID[:-1], False),
        (RUN_ID + "0", False),
        (f"../{RUN_ID}", False),
        (".cache", False),
        ("latest", False),
    ],
)
def test_only_a_lowercase_uuid_is_a_run_id(value: str, expected: bool):
    assert is_run_id(value) is expected


def test_a_layout_is_refused_for_anything_but_a_run_id(tmp_path: Path):
    assert RunLayout.for_run(tmp_path, RUN_ID).root == tmp_path / RUN_ID
    for bad in ("..", f"{RUN_ID}/..", "/etc", RUN_ID.upper()):
        with pytest.raises(RunNotFound):
            RunLayout.for_run(tmp_path, bad)


def test_every_phase_has_a_folder_and_create_makes_them_all(tmp_path: Path):
    layout = RunLayout(tmp_path / RUN_ID)
    assert set(PHASE_DIRS) == set(PHASES)
    layout.create()
    for phase in PHASES:
        assert layout.phase_dir(phase).is_dir()
    assert layout.logs_dir.is_dir()
    assert layout.run_id == RUN_ID and layout.runs_dir == tmp_path


def test_each_phase_artifact_lives_in_its_phase_folder(tmp_path: Path):
    layout = RunLayout(tmp_path / RUN_ID)
    placed = {
        "connect": [layout.raw_manifest, layout.raw_file("a" * 64, "pdf")],
        "extract": [
            layout.documents,
            layout.extraction_report,
            layout.extracted_text("k"),
            layout.extracted_pages("k"),
        ],
        "normalize": [layout.chunks, layout.dedupe_report, layout.enrichment_report, layout.chunk_stats],
        "index": [
            layout.embeddings,
            layout.upsert_stats,
            layout.vector_manifest,
            layout.chroma_dir,
            layout.keyword_ids,
        ],
        "serve": [layout.openapi, layout.retrieval_profile],
    }
    for phase, paths in placed.items():
        for path in paths:
            assert layout.phase_dir(phase) in path.parents, (phase, path)
    every = [p for paths in placed.values() for p in paths] + [layout.manifest, layout.config, layout.events_log]
    assert len(set(every)) == len(every)


def test_an_ambiguous_prefix_lists_ten_matches_and_counts_the_rest(tmp_path: Path):
    runs = tmp_path / "runs"
    ids = [f"01a230de-0000-7000-8000-0000000000{n:02d}" for n in range(13)]
    for run_id in ids:
        _run(runs, run_id)
    with pytest.raises(ConfigInvalid) as ambiguous:
        RunLayout.existing(runs, "01a230de")
    assert ambiguous.value.details["matches"] == ids[:10]
    assert "and 3 more" in ambiguous.value.message


def test_a_prefix_counts_only_runs_with_a_manifest(tmp_path: Path):
    runs = tmp_path / "runs"
    _run(runs, RUN_ID)
    (runs / "01a230de-0000-7000-8000-000000000002").mkdir()  # a folder without a manifest
    assert RunLayout.existing(runs, "01a230de").run_id == RUN_ID


def test_a_prefix_shorter_than_four_characters_names_no_run(tmp_path: Path):
    runs = tmp_path / "runs"
    _run(runs, RUN_ID)
    with pytest.raises(RunNotFound):
        RunLayout.existing(runs, "01a")
    with pytest.raises(RunNotFound):
        RunLayout.existing(tmp_path / "no-such-runs-folder", "01a2")


def test_the_runs_folder_is_the_argument_then_the_environment_then_the_config_then_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.delenv(ENV_RUNS_DIR, raising=False)
    assert resolve_runs_dir() == Path("runs")
    assert resolve_runs_dir(configured="from-config") == Path("from-config")
    monkeypatch.setenv(ENV_RUNS_DIR, str(tmp_path / "env"))
    assert resolve_runs_dir(configured="from-config") == tmp_path / "env"
    assert resolve_runs_dir(tmp_path / "arg", configured="from-config") == tmp_path / "arg"
    assert resolve_runs_dir("arg") == Path("arg")


def test_a_path_inside_the_run_resolves_and_one_leading_out_is_not_found(tmp_path: Path):
    layout = RunLayout(tmp_path / RUN_ID)
    layout.create()
    assert layout.resolve_inside("normalized/chunks.jsonl") == (layout.chunks).resolve()
    assert layout.resolve_inside(".") == layout.root.resolve()
    outside = tmp_path / "secret.txt"
    outside.write_text("no")
    os.symlink(outside, layout.root / "link.txt")
    for bad in ("../secret.txt", str(outside), "raw/../../secret.txt", "link.txt"):
        with pytest.raises(IndexFoundryError) as error:
            layout.resolve_inside(bad)
        assert error.value.code == "NOT_FOUND", bad


def test_the_folders_runs_share_are_hidden_names_that_are_never_run_ids(tmp_path: Path):
    shared = [cache_dir(tmp_path), inuse_dir(tmp_path), servers_dir(tmp_path), locks_dir(tmp_path)]
    assert len(set(shared)) == 4
    for folder in shared:
        assert folder.parent == tmp_path and folder.name.startswith(".") and not is_run_id(folder.name)
    assert server_pid_file(tmp_path, 8123).parent == servers_dir(tmp_path)
    assert server_pid_file(tmp_path, 8123) != server_pid_file(tmp_path, 8124)


def test_a_unique_run_id_prefix_names_that_run_and_an_ambiguous_one_lists_its_matches(tmp_path: Path):
    runs = tmp_path / "runs"
    a, b, c = (
        "01a230de-0000-7000-8000-000000000001",
        "01a230de-0000-7000-8000-000000000002",
        "01a230df-0000-7000-8000-000000000003",
    )
    for run_id in (a, b, c):
        _run(runs, run_id)
    assert RunLayout.existing(runs, "01a230df").run_id == c
    assert RunLayout.existing(runs, a).run_id == a
    with pytest.raises(ConfigInvalid) as ambiguous:
        RunLayout.existing(runs, "01a230de")
    assert ambiguous.value.details["matches"] == [a, b]
    assert a in ambiguous.value.message and b in ambiguous.value.message
    with pytest.raises(RunNotFound):
        RunLayout.existing(runs, "ffff")
    with pytest.raises(RunNotFound):
        RunLayout.existing(runs, "01a")  # too short to be a prefix: not a run id
