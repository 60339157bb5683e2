"""A nightly job never replaces a good index with a bad one: empty and shrunken runs fail,
a bad config is refused before a run exists, and every error is named on the console."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.stores import STORES
from tests.conftest import SAMPLE_DOCS, folder_config, write_config
from tests.fakes import RecordingEmbedder


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args], capture_output=True, text=True, timeout=300, check=False
    )


def _latest(runs: Path) -> str:
    return api.resolve_run_id(runs, "latest")


def _ten_docs(tree) -> Path:
    return tree({f"d{i}.md": f"# Doc {i}\n\nText about topic {i} and some more words.\n" for i in range(10)})


def test_an_empty_folder_run_exits_1_with_empty_content_and_latest_stays_on_the_good_run(tree, tmp_path: Path):
    runs = tmp_path / "runs"
    good = api.pipeline_run(folder_config(tree(SAMPLE_DOCS)), runs_dir=runs, embedder=RecordingEmbedder())
    assert good.status == "completed"
    empty = tmp_path / "empty"
    empty.mkdir()
    config = write_config(tmp_path / "empty.yaml", folder_config(empty))
    done = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--json")
    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["status"] == "failed"
    assert "index" not in out["phases"]  # nothing downstream ran on an empty input
    assert [e.code for e in api.status(out["run_id"], runs_dir=runs).errors] == ["EMPTY_CONTENT"]
    assert _latest(runs) == good.run_id


def test_a_glob_matching_no_chunkable_text_fails_at_the_first_empty_count(tree, runs_dir: Path):
    docs = tree({"a.md": "   \n", "b.md": "\n"})
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert out.status == "failed"
    codes = {e.code for e in api.status(out.run_id, runs_dir=runs_dir).errors}
    assert "EMPTY_CONTENT" in codes
    with pytest.raises(Exception) as error:
        _latest(runs_dir)
    assert getattr(error.value, "code", None) == "RUN_NOT_FOUND"


@pytest.mark.slow
def test_a_90_percent_shrinking_base_run_exits_1_naming_the_counts_and_latest_is_unchanged(tree, tmp_path: Path):
    runs = tmp_path / "runs"
    docs = _ten_docs(tree)
    config = write_config(tmp_path / "c.yaml", folder_config(docs))
    good = api.pipeline_run(config, runs_dir=runs, embedder=RecordingEmbedder())  # pipeline 'c', as the CLI's
    for path in sorted(docs.glob("*.md"))[1:]:
        path.unlink()
    done = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--base", "latest")
    assert done.returncode == 1
    assert "RUN_SHRANK" in done.stderr and "from 10" in done.stderr and "to 1" in done.stderr
    assert "--allow-shrink" in done.stderr  # the way out, on the console
    assert _latest(runs) == good.run_id
    allowed = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--base", "latest", "--allow-shrink")
    assert allowed.returncode == 0, allowed.stderr
    assert _latest(runs) == allowed.stdout.strip().splitlines()[-1].removeprefix("run ")


@pytest.mark.slow
def test_a_plain_nightly_rerun_that_shrinks_90_percent_fails_and_latest_stays_on_the_good_run(tree, tmp_path: Path):
    runs = tmp_path / "runs"
    docs = _ten_docs(tree)
    config = write_config(tmp_path / "c.yaml", folder_config(docs, index={"embedding_model": "hash"}))
    first = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--json")
    assert first.returncode == 0, first.stderr
    good = json.loads(first.stdout)["run_id"]
    for path in sorted(docs.glob("*.md"))[1:]:
        path.unlink()
    # The same command again, as cron runs it: no --base, the run follows 'latest' of the same sources.
    done = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--json")
    assert done.returncode == 1
    assert [e.code for e in api.status(json.loads(done.stdout)["run_id"], runs_dir=runs).errors] == ["RUN_SHRANK"]
    assert _latest(runs) == good
    # Another corpus in the same runs folder is not compared with this one.
    other = tree({"other/x.md": "# Other\n\nA different corpus with its own words in it.\n"})
    unrelated = api.pipeline_run(folder_config(other / "other"), runs_dir=runs, embedder=RecordingEmbedder())
    assert unrelated.status == "completed"


def test_the_shrink_share_is_configurable_and_a_small_loss_passes(tree, runs_dir: Path):
    docs = _ten_docs(tree)
    api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    for path in sorted(docs.glob("*.md"))[:3]:
        path.unlink()  # -30 %: under the default 50 %
    small = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, base="latest", embedder=RecordingEmbedder())
    assert small.status == "completed"
    for path in sorted(docs.glob("*.md"))[:2]:
        path.unlink()  # 7 -> 5 documents: -29 %, over a strict 20 %
    strict = api.pipeline_run(
        folder_config(docs, max_shrink=0.2), runs_dir=runs_dir, base="latest", embedder=RecordingEmbedder()
    )
    assert strict.status == "failed"
    assert [e.code for e in api.status(strict.run_id, runs_dir=runs_dir).errors] == ["RUN_SHRANK"]
    assert _latest(runs_dir) == small.run_id


def _no_run_created(runs: Path) -> bool:
    return not runs.exists() or not any(runs.iterdir())


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"connect": {"sources": [{"type": "folder", "path": "missing-folder"}]}}, "missing-folder"),
        ({"index": {"embedding_model": "hsah"}}, "did you mean 'hash'"),
        ({"index": {"embedding_model": "voyage:voyage-3"}}, "voyage"),
    ],
)
def test_config_problems_a_phase_would_meet_are_config_invalid_exit_2_before_a_run_exists(
    tree, tmp_path: Path, change: dict, fragment: str
):
    config = folder_config(tree(SAMPLE_DOCS))
    config.update({key: {**config[key], **value} for key, value in change.items()})
    path = write_config(tmp_path / "c.yaml", config)
    runs = tmp_path / "runs"
    for args in (("config", "validate", str(path)), ("pipeline", "run", str(path), "--runs-dir", str(runs))):
        done = cli(*args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("CONFIG_INVALID: ") and fragment in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert _no_run_created(runs)


def test_a_store_whose_extra_is_missing_is_refused_before_a_run(tree, runs_dir: Path, monkeypatch):
    # Simulates an environment without the qdrant extra (the dev venv has it installed).
    monkeypatch.setitem(STORES, "qdrant", dataclasses.replace(STORES["qdrant"], client="indexfoundry_no_such_module"))
    config = folder_config(tree(SAMPLE_DOCS), index={"vector_db": {"provider": "qdrant"}})
    with pytest.raises(ConfigInvalid) as error:
        api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert "indexfoundry[qdrant]" in error.value.message
    with pytest.raises(ConfigInvalid):
        api.validate_config(config)
    assert _no_run_created(runs_dir)


def test_every_config_problem_is_reported_at_once(tree, tmp_path: Path):
    config = folder_config(tmp_path / "nope", index={"embedding_model": "locall"})
    with pytest.raises(ConfigInvalid) as error:
        api.validate_config(config)
    assert len(error.value.details["errors"]) == 2


def test_per_document_errors_are_listed_on_the_console_with_code_and_source_then_counted(tree, tmp_path: Path):
    broken = {f"broken{i}.md": b"\xff\xfe\x00\xd8\x00binary\x00\x00\x9c" for i in range(7)}
    docs = tree({**SAMPLE_DOCS, **broken})
    config = write_config(tmp_path / "c.yaml", folder_config(docs))
    done = cli("pipeline", "run", str(config), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 1
    listed = [line for line in done.stderr.splitlines() if line.strip().startswith("PARSE_ERROR docs/broken")]
    assert len(listed) == 5
    assert "and 2 more in" in done.stderr and "errors.ndjson" in done.stderr


def test_a_per_phase_command_that_leaves_the_run_partial_exits_1(tree, tmp_path: Path):
    docs = tree({**SAMPLE_DOCS, "broken.md": b"\xff\xfe\x00\xd8\x00binary\x00\x00\x9c"})
    runs = tmp_path / "runs"
    out = api.pipeline_run(folder_config(docs), runs_dir=runs, embedder=RecordingEmbedder())
    assert out.status == "partial"
    done = cli("extract", "--run-id", out.run_id, "--runs-dir", str(runs), "--force", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "partial"


def test_a_completed_run_prints_the_next_commands_to_try(tree, tmp_path: Path):
    config = write_config(tmp_path / "c.yaml", folder_config(tree(SAMPLE_DOCS)))
    done = cli("pipeline", "run", str(config), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 0
    assert "indexfoundry search" in done.stderr and "indexfoundry mcp" in done.stderr


def test_typer_argument_errors_are_one_line_config_invalid_with_exit_2(tmp_path: Path):
    for args in (("search", "x", "--top-k", "abc"), ("search", "x", "--bogus"), ("run", "status")):
        done = cli(*args, "--runs-dir", str(tmp_path))
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("CONFIG_INVALID: "), done.stderr


def test_an_empty_search_query_is_config_invalid_without_pointing_at_the_config_schema(tmp_path: Path):
    done = cli("search", "  ", "--runs-dir", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.startswith("CONFIG_INVALID: ") and "config schema" not in done.stderr
