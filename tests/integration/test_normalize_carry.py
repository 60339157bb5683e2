"""A rerun after a small change chunks only the changed documents: every other document keeps
its lines of the previous normalize output, and the output is byte for byte a fresh run's,
through edits that move dedupe's verdicts on unchanged documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.models.config import parse_pipeline_config
from indexfoundry.pipeline.runner import create_run, execute, new_run_id
from indexfoundry.storage.atomic import read_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest
from tests.conftest import write_tree
from tests.fakes import RecordingEmbedder

NORMALIZED = [
    "normalized/chunks.jsonl",
    "normalized/chunk_stats.json",
    "normalized/dedupe_report.json",
    "normalized/metadata_enrichment.json",
    "normalized/document_figures.jsonl",
]
SHARED = "## Shared\n\nThe shared paragraph explains the release process, reviewed on 2024-03-12 by the team.\n"
LONG = " ".join(f"Sentence {i} of the long section describes step {i} of the widget setup." for i in range(60))


def _tree() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "a.md": f"# Alpha\n\nAlpha explains the widget.\n\n{SHARED}\n## Alpha notes\n\nNotes of alpha, ABC-12.\n",
        "b.md": f"# Beta\n\nBeta covers the gadget.\n\n{SHARED}\n## Beta notes\n\nNotes of beta.\n",
        "c.md": f"# Gamma\n\n## Long\n\n{LONG}\n\n## Changelog\n\nReleased in March 2024.\n",
        "d.md": "# Delta\n\nDer Text dieses Dokuments ist auf Deutsch geschrieben und recht kurz gehalten.\n",
    }
    files.update({f"more/e{i}.md": f"# Extra {i}\n\nPage {i} about topic {i}, ticket XYZ-{i}.\n" for i in range(6)})
    return files


def _config(folder: Path, dedupe: Any) -> dict[str, Any]:
    return {
        "connect": {"sources": [{"type": "folder", "path": str(folder), "glob": "**/*.md"}]},
        "normalize": {
            "chunk_strategy": "by_heading",
            "merge_short_sections": False,
            "dedupe": dedupe,
            "enrich": {
                "extract_dates": True,
                "regex_tags": [{"pattern": r"([A-Z]{3}-\d+)", "tag_name": "ticket"}],
                "section_patterns": [{"pattern": "(?i)changelog|released", "section_name": "changes"}],
                "taxonomy": {"hardware": ["widget", "gadget"]},
            },
        },
        # The default model's window is measured into the stats (its tokenizer only: nothing is embedded).
        "index": {"embedding_model": "local"},
    }


def _normalize(folder: Path, runs_dir: Path, config: dict[str, Any], layout: RunLayout | None = None) -> RunLayout:
    parsed = parse_pipeline_config(config)
    if layout is None:
        layout = RunLayout.for_run(runs_dir, new_run_id())
        create_run(layout, parsed)
    out = execute(layout, parsed, phases=["connect", "extract", "normalize"])
    assert out.phases["normalize"].status == "completed"
    return layout


def _same_as_fresh(layout: RunLayout, folder: Path, config: dict[str, Any], tmp_path: Path, step: str) -> None:
    fresh = _normalize(folder, tmp_path / f"fresh-{step}", config)
    for rel in NORMALIZED:
        assert (layout.root / rel).read_bytes() == (fresh.root / rel).read_bytes(), f"{step}: {rel}"


def _carried(layout: RunLayout) -> int:
    return load_manifest(layout).phases["normalize"].details.get("documents_carried", 0)


@pytest.mark.parametrize(
    "dedupe",
    [True, {"method": "exact", "scope": "per_document"}, False, {"method": "minhash"}],
    ids=["exact", "per-document", "off", "minhash"],
)
def test_a_rerun_in_place_carries_unchanged_documents_and_writes_a_fresh_runs_bytes(
    tmp_path: Path, runs_dir: Path, dedupe: Any
):
    folder = write_tree(tmp_path / "docs", _tree())
    config = _config(folder, dedupe)
    layout = _normalize(folder, runs_dir, config)
    total = len(_tree())
    across = dedupe is not False and (dedupe is True or dedupe.get("scope") != "per_document")
    assert read_json(layout.dedupe_report)["stats"]["duplicates_removed"] == (1 if across else 0)
    carries = dedupe is True or dedupe is False or dedupe["method"] == "exact"
    # 1. b's shared section was removed as a duplicate of a's; an edit of a's makes b's the original.
    (folder / "a.md").write_text((folder / "a.md").read_text().replace("release process", "build process"))
    _normalize(folder, runs_dir, config, layout)
    _same_as_fresh(layout, folder, config, tmp_path, "edit")
    # a changed; b (exact, global) has another dedupe verdict and is redone.
    redone = 2 if dedupe is True else 1
    assert _carried(layout) == (total - redone if carries else 0)
    # 2. A new first document repeats b's section again: b's section is a duplicate once more.
    (folder / "0.md").write_text(f"# Zero\n\nZero is new.\n\n{SHARED}\n## Zero notes\n\nNotes of zero.\n")
    _normalize(folder, runs_dir, config, layout)
    _same_as_fresh(layout, folder, config, tmp_path, "add")
    assert _carried(layout) == (total - redone + 1 if carries else 0)
    # 3. Deleted and edited at once; the long section (over the model's window) is edited too.
    (folder / "0.md").unlink()
    (folder / "c.md").write_text((folder / "c.md").read_text().replace("step 7", "stage 7"))
    (folder / "more/e3.md").unlink()
    _normalize(folder, runs_dir, config, layout)
    _same_as_fresh(layout, folder, config, tmp_path, "delete")
    assert _carried(layout) == (total - 2 - (1 if dedupe is True else 0) if carries else 0)


def test_a_plain_run_and_a_base_run_carry_from_the_run_they_follow(tmp_path: Path, runs_dir: Path):
    folder = write_tree(tmp_path / "docs", _tree())
    config = _config(folder, True)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    (folder / "d.md").write_text("# Delta\n\nThe delta page is English now and a little longer than before.\n")
    plain = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / plain.run_id)
    assert _carried(layout) == len(_tree()) - 1
    _same_as_fresh(layout, folder, config, tmp_path, "plain")
    (folder / "b.md").unlink()
    based = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=first.run_id)
    layout = RunLayout(runs_dir / based.run_id)
    # a is first and keeps its shared section: only b's lines are gone (d differs from the base's).
    assert _carried(layout) == len(_tree()) - 2
    _same_as_fresh(layout, folder, config, tmp_path, "base")


def test_a_forced_rerun_carries_nothing(tmp_path: Path, runs_dir: Path):
    folder = write_tree(tmp_path / "docs", _tree())
    config = _config(folder, True)
    layout = _normalize(folder, runs_dir, config)
    (folder / "b.md").write_text("# Beta\n\nBeta changed.\n")
    parsed = parse_pipeline_config(config)
    execute(layout, parsed, phases=["connect", "extract", "normalize"], force_phases=["normalize"])
    assert "documents_carried" not in load_manifest(layout).phases["normalize"].details
    _same_as_fresh(layout, folder, config, tmp_path, "forced")


def test_random_rounds_of_edits_over_shared_sections_always_end_like_a_fresh_run(tmp_path: Path, runs_dir: Path):
    import random

    # Documents made of sections drawn from a small pool: most sections are duplicates of another
    # document's, so each round moves dedupe's verdicts on documents that did not change.
    pool = [f"## Part {n}\n\nPart {n} of the shared pool, on subject {n % 3}, QRS-{n}.\n" for n in range(7)]
    rng = random.Random(7)

    def page(name: str) -> str:
        return f"# {name}\n\n" + "\n".join(rng.sample(pool, rng.randint(1, 3)))

    folder = write_tree(tmp_path / "docs", {f"p{i:02d}.md": page(f"Page {i}") for i in range(12)})
    config = _config(folder, True)
    layout = _normalize(folder, runs_dir, config)
    carried = 0
    for round_ in range(6):
        names = sorted(p.name for p in folder.glob("*.md"))
        for name in rng.sample(names, 2):
            (folder / name).write_text(page(f"Page {name} round {round_}"))
        if round_ % 2:
            (folder / rng.choice(names)).unlink()
        else:
            (folder / f"n{round_}.md").write_text(page(f"New {round_}"))
        _normalize(folder, runs_dir, config, layout)
        _same_as_fresh(layout, folder, config, tmp_path, f"round {round_}")
        carried += _carried(layout)
    assert carried > 0


def test_chunks_a_normalize_tool_rewrote_are_never_carried_over(tmp_path: Path, runs_dir: Path):
    from indexfoundry.app.tools.registry import call_tool

    folder = write_tree(tmp_path / "docs", _tree())
    config = _config(folder, True)
    layout = _normalize(folder, runs_dir, config)
    # The enrich tool rewrites chunks.jsonl with other rules (same number of lines); the phase's
    # entry keeps its config hash and versions, with the tool's files recorded.
    rules = {"taxonomy": {"greek": ["alpha", "beta"]}}
    call_tool("indexfoundry_normalize_enrich", {"run_id": layout.run_id, "rules": rules}, runs_dir=runs_dir)
    (folder / "d.md").write_text("# Delta\n\nThe delta page is English now.\n")
    _normalize(folder, runs_dir, config, layout)
    assert _carried(layout) == 0
    _same_as_fresh(layout, folder, config, tmp_path, "after the enrich tool")
