"""A rerun after a small change embeds, describes and writes only the changed chunks: every other
chunk keeps its rows of the previous embeddings file (its own vector and its windows'), and the
index is byte for byte a fresh run's: the embeddings file, the vector manifest, the BM25 files
and what the store holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexfoundry import api
from indexfoundry.phases.index.upsert import open_run_store
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest, load_run_config
from tests.conftest import write_tree

LONG = " ".join(f"Sentence {i} of the long section describes step {i} of the widget setup." for i in range(60))


def _tree() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "a.md": "# Alpha\n\nAlpha explains the widget.\n\n## Alpha notes\n\nNotes of alpha.\n",
        "b.md": "# Beta\n\nBeta covers the gadget.\n\n## Beta notes\n\nNotes of beta.\n",
        "c.md": f"# Gamma\n\n## Long\n\n{LONG}\n\n## Changelog\n\nReleased in March 2024.\n",
    }
    files.update({f"more/e{i}.md": f"# Extra {i}\n\nPage {i} about topic {i}.\n" for i in range(5)})
    return files


def _config(folder: Path, model: str = "hash", **vector_db: Any) -> dict[str, Any]:
    return {
        "connect": {"sources": [{"type": "folder", "path": str(folder), "glob": "**/*.md"}]},
        "normalize": {"chunk_strategy": "by_heading", "merge_short_sections": False},
        "index": {"embedding_model": model, "vector_db": vector_db},
    }


def _index_files(layout: RunLayout) -> dict[str, bytes]:
    """The index phase's content: every file but the upsert stats (they count changes)."""
    entry = load_manifest(layout).phases["index"]
    return {a.path: (layout.root / a.path).read_bytes() for a in entry.artifacts if "upsert_stats" not in a.path}


def _store(layout: RunLayout) -> dict[str, Any]:
    store = open_run_store(layout, load_run_config(layout))
    try:
        return store.existing(store.all_ids())
    finally:
        store.close()


def _same_as_fresh(layout: RunLayout, config: dict[str, Any], tmp_path: Path, step: str) -> None:
    fresh = api.pipeline_run(config, runs_dir=tmp_path / f"fresh-{step}")
    fresh_layout = RunLayout(tmp_path / f"fresh-{step}" / fresh.run_id)
    assert _index_files(layout) == _index_files(fresh_layout), step
    assert _store(layout) == _store(fresh_layout), step


def _first_run(tmp_path: Path, runs_dir: Path) -> tuple[Path, dict[str, Any], RunLayout]:
    """The docs tree, its config (hash embedder) and its first run."""
    folder = write_tree(tmp_path / "docs", _tree())
    config = _config(folder)
    return folder, config, RunLayout(runs_dir / api.pipeline_run(config, runs_dir=runs_dir).run_id)


def _carried(layout: RunLayout) -> int | None:
    return load_manifest(layout).phases["index"].details.get("rows_carried")


def _rows(layout: RunLayout, *names: str, holding: str | None = None) -> int:
    """The rows of the embeddings file; with ``names``, those of the chunks of these files; with
    ``holding``, those of the chunks whose text holds it."""
    from indexfoundry.backends.embedding.windows import chunk_of
    from indexfoundry.storage.atomic import iter_jsonl

    rows = [row["chunk_id"] for row in iter_jsonl(layout.embeddings)]
    chunks = {row["chunk_id"]: row for row in iter_jsonl(layout.chunks)}
    return sum(
        1
        for store_id in rows
        if (not names or chunks[chunk_of(store_id)]["source"]["uri"].endswith(names))
        and (holding is None or holding in chunks[chunk_of(store_id)]["content"]["text"])
    )


def test_a_rerun_in_place_carries_unchanged_chunks_and_their_windows_and_ends_like_a_fresh_run(
    tmp_path: Path, runs_dir: Path
):
    # The default local model: the long section is over its window, so its chunk has windows.
    folder = write_tree(tmp_path / "docs", _tree())
    config = _config(folder, "local", store_text=True, metadata_fields=["metadata.tags"])
    run_id = api.pipeline_run(config, runs_dir=runs_dir).run_id
    layout = RunLayout(runs_dir / run_id)
    assert load_manifest(layout).phases["index"].stats["chunks_in_windows"] >= 1
    # 1. One page edited (its chunks get new ids): every other row, windows too, is carried.
    (folder / "a.md").write_text((folder / "a.md").read_text().replace("Notes of alpha", "Notes on alpha"))
    api.pipeline_run(config, runs_dir=runs_dir, run_id=run_id)
    assert _carried(layout) == _rows(layout) - _rows(layout, "/a.md") > 0
    _same_as_fresh(layout, config, tmp_path, "edit")
    # 2. The long chunk edited (its windows move), a page added and one deleted.
    (folder / "c.md").write_text((folder / "c.md").read_text().replace("step 7 ", "stage 7 "))
    (folder / "more/e9.md").write_text("# Extra 9\n\nA new page about topic nine.\n")
    (folder / "more/e2.md").unlink()
    api.pipeline_run(config, runs_dir=runs_dir, run_id=run_id)
    assert _carried(layout) == _rows(layout) - _rows(layout, "/c.md", "/e9.md") > 0
    assert load_manifest(layout).phases["index"].stats["vectors_pruned"] > 0
    _same_as_fresh(layout, config, tmp_path, "long-add-delete")
    # 3. Another enrichment rule: the chunks keep their ids, but the lines of those it tags
    # change (and with them their rows' metadata): only the untouched lines' rows are carried.
    config["normalize"]["enrich"] = {"taxonomy": {"hardware": ["widget"]}}
    api.pipeline_run(config, runs_dir=runs_dir, run_id=run_id)
    assert _carried(layout) == _rows(layout) - _rows(layout, holding="widget") > 0
    _same_as_fresh(layout, config, tmp_path, "new-tags")


def test_a_plain_run_and_a_base_run_carry_from_the_run_they_follow(tmp_path: Path, runs_dir: Path):
    folder = write_tree(tmp_path / "docs", _tree())
    config = _config(folder)
    first = api.pipeline_run(config, runs_dir=runs_dir)
    (folder / "b.md").write_text("# Beta\n\nBeta covers the gadget and more.\n\n## Beta notes\n\nNotes of beta.\n")
    plain = RunLayout(runs_dir / api.pipeline_run(config, runs_dir=runs_dir).run_id)
    assert _carried(plain) == _rows(plain) - _rows(plain, "/b.md") > 0
    _same_as_fresh(plain, config, tmp_path, "plain")
    (folder / "more/e0.md").unlink()
    based = RunLayout(runs_dir / api.pipeline_run(config, runs_dir=runs_dir, base=first.run_id).run_id)
    # Against the base: b differs and e0 is gone; every other row is the base's.
    assert _carried(based) == _rows(based) - _rows(based, "/b.md") > 0
    _same_as_fresh(based, config, tmp_path, "base")


def test_a_forced_run_or_other_index_settings_carry_nothing(tmp_path: Path, runs_dir: Path):
    folder, config, layout = _first_run(tmp_path, runs_dir)
    run_id = layout.run_id
    api.pipeline_run(config, runs_dir=runs_dir, run_id=run_id, force=True)
    assert _carried(layout) is None
    # Another metadata field changes every row's metadata and row hash.
    other = _config(folder, metadata_fields=["metadata.language"])
    (folder / "a.md").write_text("# Alpha\n\nAlpha changed.\n")
    api.pipeline_run(other, runs_dir=runs_dir, run_id=run_id)
    assert _carried(layout) is None
    _same_as_fresh(layout, other, tmp_path, "other-settings")


def test_rows_the_embed_tool_wrote_are_never_carried(tmp_path: Path, runs_dir: Path):
    from indexfoundry.app.tools.registry import call_tool

    folder, config, layout = _first_run(tmp_path, runs_dir)
    run_id = layout.run_id
    # The tool rewrites the embeddings file in its own way (no chunk line hashes); the phase's
    # entry keeps its config hash and versions, with the tool's files recorded.
    model = {"provider": "hash", "model_name": "hash"}
    call_tool("indexfoundry_index_embed", {"run_id": run_id, "model": model, "force": True}, runs_dir=runs_dir)
    assert "written_by" in load_manifest(layout).phases["index"].details
    (folder / "a.md").write_text("# Alpha\n\nAlpha changed.\n")
    api.pipeline_run(config, runs_dir=runs_dir, run_id=run_id)
    assert _carried(layout) is None
    _same_as_fresh(layout, config, tmp_path, "after the tool")
