"""Rerunning skips unchanged phases; --force reruns; changes propagate by content."""

from __future__ import annotations

from pathlib import Path

from indexfoundry import api
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder


def _statuses(out) -> dict[str, str]:
    return {name: phase.status for name, phase in out.phases.items()}


def test_rerun_without_changes_skips_every_phase_and_embeds_nothing(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first_embedder = RecordingEmbedder()
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=first_embedder)
    assert first_embedder.texts
    layout = RunLayout(runs_dir / first.run_id)
    before = {p: p.stat().st_mtime_ns for p in layout.root.rglob("*") if p.is_file() and "logs" not in p.parts}

    again = RecordingEmbedder()
    second = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, embedder=again)
    assert set(_statuses(second).values()) == {"skipped"}
    assert again.calls == []
    assert second.status == "completed"
    # Skipped phases write nothing: every artifact is untouched (only the manifest is rewritten).
    after = {p: p.stat().st_mtime_ns for p in before}
    changed = {p.relative_to(layout.root).as_posix() for p in before if before[p] != after[p]}
    assert changed <= {"manifest.json", ".lock"}


def test_force_reruns_every_phase_but_reuses_cached_embeddings(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    again = RecordingEmbedder()
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, force=True, embedder=again)
    assert set(_statuses(out).values()) == {"completed"}
    assert again.calls == []  # every text is in the (model, text hash) cache
    assert out.phases["index"].reused > 0 and out.phases["index"].new == 0


def test_forcing_one_phase_with_identical_output_leaves_later_phases_skipped(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    out = api.run_phase("extract", first.run_id, runs_dir=runs_dir, force=True)
    assert _statuses(out) == {"extract": "completed"}
    # Downstream phases re-plan from their fingerprints: identical extract output, nothing to redo.
    later = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, embedder=RecordingEmbedder())
    assert _statuses(later) == {p: "skipped" for p in ("connect", "extract", "normalize", "index", "serve")}


def test_a_changed_source_file_reruns_the_phases_downstream_of_it(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    (docs / "guide" / "install.md").write_text("# Installation\n\nUse the installer script from the release page.\n")
    again = RecordingEmbedder()
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, embedder=again)
    assert _statuses(out) == {p: "completed" for p in ("connect", "extract", "normalize", "index", "serve")}
    # Only the edited document's new text was embedded.
    assert len(again.texts) == 1 and "installer script" in again.texts[0]


def test_a_config_change_reruns_from_the_phase_it_concerns(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    config = folder_config(docs, normalize={"chunk_strategy": "recursive"})
    out = api.pipeline_run(config, runs_dir=runs_dir, run_id=first.run_id, embedder=RecordingEmbedder())
    assert _statuses(out)["connect"] == "skipped"
    assert _statuses(out)["extract"] == "skipped"
    assert _statuses(out)["normalize"] == "completed"


def test_a_tampered_artifact_makes_its_phase_run_again(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / first.run_id)
    layout.chunks.write_text("")
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, embedder=RecordingEmbedder())
    assert _statuses(out)["normalize"] == "completed"
    assert _statuses(out)["index"] == "skipped"  # the regenerated chunks are identical
    assert load_manifest(layout).status == "completed"


def test_a_tampered_file_named_by_a_file_list_makes_its_phase_run_again(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / first.run_id)
    entry = load_manifest(layout).phases["extract"]
    listed = [a for a in entry.artifacts if a.files is not None]
    assert [a.path for a in listed] == ["extracted/files.sha256"] and listed[0].files == 3
    text = sorted(layout.extracted_dir.glob("*.txt"))[0]
    text.write_text("tampered\n", encoding="utf-8")
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, embedder=RecordingEmbedder())
    assert _statuses(out)["connect"] == "skipped"
    assert _statuses(out)["extract"] == "completed"
    assert text.read_text(encoding="utf-8") != "tampered\n"
    assert _statuses(out)["normalize"] == "skipped"  # the extraction came out the same


def test_the_file_lists_are_sha256sum_files_of_the_run(tree, runs_dir: Path):
    import subprocess

    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / first.run_id)
    for phase in ("connect", "extract"):
        checked = subprocess.run(
            ["sha256sum", "--check", "--strict", layout.file_list(phase).relative_to(layout.root).as_posix()],
            cwd=layout.root,
            capture_output=True,
            text=True,
            check=False,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert checked.stdout.count(": OK") == 3
    assert len(layout.manifest.read_bytes()) < 20_000  # nothing in it grows with the files


def test_a_run_with_a_version_1_manifest_is_skipped_when_unchanged_and_a_base_for_a_new_run(tree, runs_dir: Path):
    """Runs made before file lists name every per-item file in their manifest: their phases
    verify and skip, the first phase after one that lists its files anew reruns once (its inputs
    are named differently) taking all its work from the run, and they hand their extractions to
    a run based on them."""
    import json

    from indexfoundry.storage.manifest import listed_files

    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / first.run_id)
    data = json.loads(layout.manifest.read_text(encoding="utf-8"))
    data["schema_version"] = 1
    for entry in data["phases"].values():
        for key in ("inputs", "outputs"):
            entry[key] = {"count": entry[key]["count"], "hashes": ["0" * 64] * entry[key]["count"]}
        spread = []
        for artifact in entry["artifacts"]:
            if "files" in artifact:
                path = layout.root / artifact["path"]
                for rel, digest in sorted(listed_files(layout, [_record(artifact)]).items()):
                    spread.append({"path": rel, "sha256": digest})
                path.unlink()
            else:
                spread.append(artifact)
        entry["artifacts"] = sorted(spread, key=lambda a: a["path"])
    layout.manifest.write_text(json.dumps(data, indent=2), encoding="utf-8")
    embedder = RecordingEmbedder()
    again = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, embedder=embedder)
    assert _statuses(again)["connect"] == "skipped" and again.status == "completed"
    assert _statuses(again)["extract"] == "completed" and again.phases["extract"].new == 0
    assert embedder.calls == []
    again = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=first.run_id, embedder=embedder)
    assert set(_statuses(again).values()) == {"skipped"}
    layout.manifest.write_text(json.dumps(data, indent=2), encoding="utf-8")  # version 1 again
    based = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, base=first.run_id, embedder=RecordingEmbedder())
    assert based.status == "completed" and based.phases["extract"].reused == 3
    assert load_manifest(RunLayout(runs_dir / based.run_id)).schema_version == 2


def _record(data: dict):
    from indexfoundry.models.manifests import ArtifactRecord

    return ArtifactRecord.model_validate(data)
