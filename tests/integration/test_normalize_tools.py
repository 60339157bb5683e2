"""The normalize tools (chunk, enrich, dedupe) on a real run, through the registry and the CLI,
and the pipeline config's normalize options."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool, load_tools
from indexfoundry.errors import IndexFoundryError
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import artifacts_verify, load_manifest
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder

CHECKLIST = (
    "The deployment checklist: build the wheel, run the test suite on every supported Python, tag the release, "
    "write the changelog entry and publish the wheel to the package index"
)
DUPLICATED = {
    **SAMPLE_DOCS,
    "notes/a.md": "# Notes\n\n" + CHECKLIST + ".\n",
    "notes/b.md": "# Notes\n\n" + CHECKLIST + "!\n",
}


@pytest.fixture
def run(tree, runs_dir: Path, embedder: RecordingEmbedder) -> RunLayout:
    out = api.pipeline_run(folder_config(tree(DUPLICATED)), runs_dir=runs_dir, embedder=embedder)
    assert out.status == "completed"
    return RunLayout(runs_dir / out.run_id)


def chunks_of(layout: RunLayout) -> list[dict]:
    return list(iter_jsonl(layout.chunks))


def test_the_three_normalize_tools_are_registered_with_truthful_annotations():
    tools = load_tools()
    for name in ("indexfoundry_normalize_chunk", "indexfoundry_normalize_enrich", "indexfoundry_normalize_dedupe"):
        assert name in tools
        assert tools[name].annotations.read_only is False and tools[name].annotations.open_world is False
    assert tools["indexfoundry_normalize_dedupe"].annotations.destructive is True
    schema = tools["indexfoundry_normalize_chunk"].input_model.model_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]["strategy"]["enum"]) == {
        "fixed_chars",
        "by_paragraph",
        "by_heading",
        "by_page",
        "by_sentence",
        "recursive",
    }


def test_chunk_tool_rechunks_records_the_manifest_and_skips_an_identical_call(
    run: RunLayout, embedder: RecordingEmbedder
):
    args = {"run_id": run.run_id, "input_paths": [], "strategy": "by_sentence", "max_chars": 120, "overlap_chars": 0}
    out = call_tool("indexfoundry_normalize_chunk", args, runs_dir=run.runs_dir)
    assert out.success and not out.skipped
    assert out.stats.documents_processed == 5
    assert out.stats.chunks_created == len(chunks_of(run)) > 5
    assert out.chunker_config.strategy == "by_sentence" and len(out.chunker_config.config_hash) == 64
    manifest = load_manifest(run)
    normalize = manifest.phases["normalize"]
    assert normalize.details["written_by"] == "indexfoundry_normalize_chunk"
    assert artifacts_verify(run, normalize.artifacts)
    assert manifest.totals.chunks_created == out.stats.chunks_created
    again = call_tool("indexfoundry_normalize_chunk", args, runs_dir=run.runs_dir)
    assert again.skipped and again.stats == out.stats
    forced = call_tool("indexfoundry_normalize_chunk", {**args, "force": True}, runs_dir=run.runs_dir)
    assert not forced.skipped and forced.stats == out.stats
    # The index phase sees new chunks and embeds them.
    embedder.calls.clear()
    indexed = api.run_phase("index", run.run_id, runs_dir=run.runs_dir, embedder=embedder)
    assert indexed.phases["index"].status == "completed"
    assert embedder.texts


def test_chunk_tool_takes_selected_input_paths_and_refuses_others(run: RunLayout):
    docs = list(iter_jsonl(run.documents))
    theme = next(d for d in docs if d["uri"].endswith("theme.md"))
    out = call_tool(
        "indexfoundry_normalize_chunk",
        {"run_id": run.run_id, "input_paths": [theme["text_path"]], "strategy": "by_heading"},
        runs_dir=run.runs_dir,
    )
    assert out.stats.documents_processed == 1
    assert {c["source"]["uri"] for c in chunks_of(run)} == {theme["uri"]}
    for bad in ("extracted/nope.txt", "../../etc/passwd"):
        with pytest.raises(IndexFoundryError) as info:
            call_tool(
                "indexfoundry_normalize_chunk", {"run_id": run.run_id, "input_paths": [bad]}, runs_dir=run.runs_dir
            )
        assert info.value.code == "NOT_FOUND"
    with pytest.raises(IndexFoundryError) as info:
        call_tool(
            "indexfoundry_normalize_chunk",
            {"run_id": run.run_id, "input_paths": [], "stratgy": "x"},
            runs_dir=run.runs_dir,
        )
    assert info.value.code == "CONFIG_INVALID"


def test_enrich_tool_writes_tags_and_rejects_an_invalid_regex_before_writing(run: RunLayout):
    before = run.chunks.read_bytes()
    with pytest.raises(IndexFoundryError) as info:
        call_tool(
            "indexfoundry_normalize_enrich",
            {"run_id": run.run_id, "rules": {"regex_tags": [{"pattern": "([a-z", "tag_name": "bad"}]}},
            runs_dir=run.runs_dir,
        )
    assert info.value.code == "CONFIG_INVALID" and info.value.details["pattern"] == "([a-z"
    assert run.chunks.read_bytes() == before
    rules = {
        "taxonomy": {"setup": ["install", "pip"]},
        "regex_tags": [{"pattern": r"Python (\d+\.\d+)", "tag_name": "python"}],
    }
    out = call_tool("indexfoundry_normalize_enrich", {"run_id": run.run_id, "rules": rules}, runs_dir=run.runs_dir)
    assert not out.skipped and out.stats.tags["setup"] >= 1 and out.stats.tags["python:3.11"] == 1
    assert out.stats.languages.get("en", 0) >= 1
    tagged = [c for c in chunks_of(run) if "python:3.11" in (c["metadata"].get("tags") or [])]
    assert len(tagged) == 1 and "setup" in tagged[0]["metadata"]["tags"]
    report = read_json(run.enrichment_report)
    assert report["rules"]["taxonomy"] == {"setup": ["install", "pip"]}
    again = call_tool("indexfoundry_normalize_enrich", {"run_id": run.run_id, "rules": rules}, runs_dir=run.runs_dir)
    assert again.skipped


def test_dedupe_tool_removes_the_near_duplicate_and_reports_it(run: RunLayout):
    call_tool(
        "indexfoundry_normalize_chunk",
        {"run_id": run.run_id, "input_paths": [], "strategy": "by_paragraph", "min_chars": 50},
        runs_dir=run.runs_dir,
    )
    out = call_tool(
        "indexfoundry_normalize_dedupe",
        {"run_id": run.run_id, "method": "minhash", "similarity_threshold": 0.9},
        runs_dir=run.runs_dir,
    )
    assert out.stats.duplicates_removed == 1 and out.stats.duplicate_groups == 1
    report = read_json(run.dedupe_report)
    [removed] = report["removed"]
    assert removed["uri"] == "docs/notes/b.md" and removed["duplicate_of_uri"] == "docs/notes/a.md"
    assert 0.9 <= removed["similarity"] < 1.0
    assert removed["chunk_id"] not in {c["chunk_id"] for c in chunks_of(run)}
    again = call_tool(
        "indexfoundry_normalize_dedupe",
        {"run_id": run.run_id, "method": "minhash", "similarity_threshold": 0.9},
        runs_dir=run.runs_dir,
    )
    assert again.skipped and again.stats == out.stats


def test_pipeline_config_accepts_every_normalize_option(tree, runs_dir: Path, embedder: RecordingEmbedder):
    normalize = {
        "chunk_strategy": "by_paragraph",
        "max_chars": 400,
        "min_chars": 50,
        "overlap_chars": 0,
        "dedupe": {"method": "simhash", "similarity_threshold": 0.9, "scope": "global"},
        "detect_language": True,
        "enrich": {"extract_dates": True, "taxonomy": {"theme": ["theme"]}},
    }
    out = api.pipeline_run(folder_config(tree(DUPLICATED), normalize=normalize), runs_dir=runs_dir, embedder=embedder)
    assert out.status == "completed"
    layout = RunLayout(runs_dir / out.run_id)
    assert read_json(layout.dedupe_report)["method"] == "simhash"
    assert read_json(layout.chunk_stats)["chunker_config"]["strategy"] == "by_paragraph"
    chunks = chunks_of(layout)
    assert any("theme" in (c["metadata"].get("tags") or []) for c in chunks)
    assert {c["metadata"].get("language") for c in chunks} <= {"en", None}
    assert any(c["metadata"].get("language") == "en" for c in chunks)


def test_an_invalid_regex_in_the_pipeline_config_fails_normalize_with_config_invalid(
    tree, runs_dir: Path, embedder: RecordingEmbedder
):
    normalize = {"enrich": {"section_patterns": [{"pattern": "(?P<", "section_name": "x"}]}}
    out = api.pipeline_run(folder_config(tree(SAMPLE_DOCS), normalize=normalize), runs_dir=runs_dir, embedder=embedder)
    assert out.status == "failed" and out.phases["normalize"].status == "failed"
    errors = load_manifest(RunLayout(runs_dir / out.run_id)).phases["normalize"].errors
    assert [e.code for e in errors] == ["CONFIG_INVALID"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_cli_normalize_subcommands_print_the_tool_outputs_as_json(run: RunLayout):
    common = ["--run-id", run.run_id, "--runs-dir", str(run.runs_dir), "--json"]
    done = cli(
        "normalize", "chunk", *common, "--strategy", "fixed_chars", "--max-chars", "100", "--overlap-chars", "10"
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["chunker_config"]["strategy"] == "fixed_chars" and out["stats"]["chunks_at_max"] > 0
    done = cli("normalize", "dedupe", *common, "--method", "exact")
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["stats"]) == {
        "input_chunks",
        "output_chunks",
        "duplicates_removed",
        "duplicate_groups",
    }
    done = cli("normalize", "enrich", *common, "--rules", '{"regex_tags": [{"pattern": "(", "tag_name": "x"}]}')
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "CONFIG_INVALID"
    done = cli("normalize", "chunk", *common, "--strategy", "by_magic")
    assert done.returncode == 2 and json.loads(done.stdout)["error"]["code"] == "CONFIG_INVALID"
