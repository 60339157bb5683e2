"""run diff: config keys, artifacts per phase, chunks per document; timing never counts."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.pipeline.diff import config_changes, render_markdown, text_diff
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest
from indexfoundry.surfaces.cli import app
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder


def test_config_changes_name_changed_leaf_keys_and_ignore_the_run_id():
    a = {"run_id": None, "normalize": {"max_chars": 1500, "overlap_chars": 150}, "force": False}
    b = {"run_id": "x", "normalize": {"max_chars": 800, "overlap_chars": 150}, "force": True}
    changes = config_changes(a, b)
    assert [(c.key, c.a, c.b) for c in changes] == [("normalize.max_chars", 1500, 800)]


def test_text_diff_is_short_and_shows_the_changed_lines():
    diff = text_diff("one\ntwo\nthree\n", "one\n2\nthree\n")
    assert "-two" in diff and "+2" in diff
    long = text_diff("\n".join(map(str, range(200))), "\n".join(str(i * 7) for i in range(200)), max_lines=10)
    assert len(long.splitlines()) == 11


def _two_runs(tree, runs_dir: Path, **second_sections):
    docs = tree(SAMPLE_DOCS)
    a = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    b = api.pipeline_run(folder_config(docs, **second_sections), runs_dir=runs_dir, embedder=RecordingEmbedder())
    return a.run_id, b.run_id


def test_two_runs_of_the_same_inputs_are_identical_whatever_their_timings(tree, runs_dir: Path):
    a, b = _two_runs(tree, runs_dir)
    layout = RunLayout(runs_dir / b)
    manifest = load_manifest(layout)
    for phase in manifest.phases.values():
        phase.duration_ms = (phase.duration_ms or 0) + 12345
        phase.started_at = "2001-01-01T00:00:00.000Z"
    RunSession(layout, manifest).commit(totals=False)
    out = api.diff(a, b, runs_dir=runs_dir, include_chunks=True)
    assert out.identical
    assert out.config == []
    assert all(not p.changed for p in out.phases.values())


def test_a_config_change_shows_the_key_and_the_artifacts_it_changed(tree, runs_dir: Path):
    a, b = _two_runs(tree, runs_dir, normalize={"chunk_strategy": "recursive", "max_chars": 200, "overlap_chars": 20})
    out = api.diff(a, b, runs_dir=runs_dir)
    keys = {c.key for c in out.config}
    assert {"normalize.chunk_strategy", "normalize.max_chars", "normalize.overlap_chars"} <= keys
    assert not out.identical
    assert out.phases["connect"].changed is False
    modified = {m.path: m for m in out.phases["normalize"].modified}
    assert "normalized/chunks.jsonl" in modified
    assert modified["normalized/chunks.jsonl"].sha_a != modified["normalized/chunks.jsonl"].sha_b
    assert len(modified["normalized/chunks.jsonl"].sha_a or "") == 12


def test_cli_diff_exit_code_and_formats(tree, runs_dir: Path):
    a, b = _two_runs(tree, runs_dir, normalize={"max_chars": 300})
    runner = CliRunner()
    same = runner.invoke(app, ["run", "diff", a, a, "--runs-dir", str(runs_dir), "--exit-code"])
    assert same.exit_code == 0, same.output
    assert "identical" in same.output
    differ = runner.invoke(app, ["run", "diff", a, b, "--runs-dir", str(runs_dir), "--exit-code"])
    assert differ.exit_code == 1
    assert "normalize.max_chars" in differ.output
    no_flag = runner.invoke(app, ["run", "diff", a, b, "--runs-dir", str(runs_dir)])
    assert no_flag.exit_code == 0
    md = runner.invoke(
        app, ["run", "diff", a, b, "--runs-dir", str(runs_dir), "--format", "markdown", "--include-chunks"]
    )
    assert md.exit_code == 0
    assert md.output.startswith("### IndexFoundry run diff")
    assert "| phase | added | removed | modified | unchanged | records |" in md.output
    as_json = runner.invoke(app, ["run", "diff", a, b, "--runs-dir", str(runs_dir), "--json"])
    data = json.loads(as_json.output)
    assert data["identical"] is False and data["run_id_a"] == a


def test_diff_of_an_unknown_run_is_run_not_found(tree, runs_dir: Path):
    from indexfoundry.errors import RunNotFound

    a, _ = _two_runs(tree, runs_dir)
    try:
        api.diff(a, "0190a000-0000-7000-8000-000000000000", runs_dir=runs_dir)
    except RunNotFound as error:
        assert error.code == "RUN_NOT_FOUND"
    else:
        raise AssertionError("expected RUN_NOT_FOUND")


def test_markdown_without_flags_names_changed_documents_and_chunks_capped_with_the_counts_as_summary(
    tree, runs_dir: Path
):
    docs = tree({f"d{i}.md": f"# Doc {i}\n\n## Part\n\nText {i}.\n\n## Other\n\nMore {i}.\n" for i in range(4)})
    a = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder()).run_id
    for i in range(3):
        (docs / f"d{i}.md").write_text(f"# Doc {i}\n\n## Part\n\nNew text {i}.\n\n## Other\n\nChanged {i}.\n")
    b = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder()).run_id
    out = api.diff(a, b, runs_dir=runs_dir, include_chunks=True)
    md = render_markdown(out, max_documents=2, max_chunks=1)
    assert md.index("| phase | added |") < md.index("**Changed documents**")  # the table is the summary
    assert "- modified `docs/d0.md`" in md and "- modified `docs/d1.md`" in md
    assert "docs/d3.md" not in md  # unchanged
    assert "… 1 more documents" in md and "… 1 more chunks" in md
    assert "````diff" not in md  # text diffs only with --include-chunks
    cli = CliRunner().invoke(app, ["run", "diff", a, b, "--runs-dir", str(runs_dir), "--format", "markdown"])
    assert cli.exit_code == 0 and "- modified `docs/d2.md`" in cli.output
