"""Incremental runs with --base: reuse what did not change, and end up exactly like a fresh run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexfoundry import api
from indexfoundry.phases.index import decode_vector, open_run_store
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest, load_run_config
from tests.conftest import folder_config, write_tree
from tests.fakes import RecordingEmbedder


def _doc(i: int, part_b: str | None = None) -> str:
    return (
        f"# Document {i}\n\nDocument {i} introduces topic {i} for the incremental test corpus.\n\n"
        f"## Setup {i}\n\nSetup step {i}: install the widget number {i} and configure it carefully.\n\n"
        f"## Usage {i}\n\n{part_b or f'Usage note {i}: call the widget {i} from your own code.'}\n"
    )


def _corpus(n: int = 100) -> dict[str, str | bytes]:
    return {f"section{i % 4}/doc{i:03d}.md": _doc(i) for i in range(n)}


def artifact_bytes(layout: RunLayout) -> dict[str, bytes]:
    """Every artifact every phase recorded, by relative path, with its bytes."""
    manifest = load_manifest(layout)
    out: dict[str, bytes] = {}
    for phase in manifest.phases.values():
        assert phase.status == "completed"
        for artifact in phase.artifacts:
            out[artifact.path] = (layout.root / artifact.path).read_bytes()
    return out


def _embedding_texts(layout: RunLayout, chunk_ids: set[str]) -> list[str]:
    from indexfoundry.models.records import DocumentChunk

    chunks = [DocumentChunk.model_validate(row) for row in iter_jsonl(layout.chunks)]
    return sorted(c.embedding_text() for c in chunks if c.chunk_id in chunk_ids)


@pytest.fixture
def hundred(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "docs", _corpus())


def test_editing_one_of_100_documents_reembeds_exactly_its_changed_chunks_and_diff_names_them(
    hundred: Path, runs_dir: Path
):
    config = folder_config(hundred)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert first.status == "completed"

    (hundred / "section2/doc042.md").write_text(_doc(42, "Usage note 42 was rewritten: call widget 42 twice."))
    recorder = RecordingEmbedder()
    second = api.pipeline_run(config, runs_dir=runs_dir, embedder=recorder, base=first.run_id)
    assert second.status == "completed"

    diff = api.diff(first.run_id, second.run_id, runs_dir=runs_dir, include_chunks=True)
    assert diff.documents is not None
    assert [d.uri for d in diff.documents] == ["docs/section2/doc042.md"]
    changed = diff.documents[0]
    assert changed.change == "modified" and not changed.added and not changed.removed
    assert len(changed.modified) == 1
    assert "rewritten" in changed.modified[0].diff
    layout_b = RunLayout(runs_dir / second.run_id)
    named = {m.b.chunk_id for m in changed.modified} | {c.chunk_id for c in changed.added}
    assert sorted(recorder.texts) == _embedding_texts(layout_b, named)

    phases = second.phases
    assert (phases["connect"].reused, phases["connect"].new) == (99, 1)
    assert (phases["extract"].reused, phases["extract"].new) == (99, 1)
    assert phases["index"].new == 1
    assert phases["index"].reused > 0
    assert load_manifest(layout_b).base_run_id == first.run_id


def test_a_run_with_a_base_has_the_same_artifacts_as_a_run_from_scratch(hundred: Path, runs_dir: Path, tmp_path):
    config = folder_config(hundred)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    (hundred / "section1/doc005.md").write_text(_doc(5, "A different usage paragraph for five."))
    (hundred / "section3/doc007.md").unlink()
    write_tree(hundred, {"section0/new.md": _doc(1000)})
    incremental = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=first.run_id)
    scratch_runs = tmp_path / "scratch-runs"
    scratch = api.pipeline_run(config, runs_dir=scratch_runs, embedder=RecordingEmbedder())
    a = artifact_bytes(RunLayout(runs_dir / incremental.run_id))
    b = artifact_bytes(RunLayout(scratch_runs / scratch.run_id))
    assert a.keys() == b.keys()
    assert {k for k in a if a[k] != b[k]} == set()


def test_a_deleted_document_shows_as_removed_and_its_vectors_are_gone(hundred: Path, runs_dir: Path):
    config = folder_config(hundred)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout_a = RunLayout(runs_dir / first.run_id)
    gone_ids = {c["chunk_id"] for c in iter_jsonl(layout_a.chunks) if c["source"]["uri"] == "docs/section3/doc007.md"}
    assert gone_ids
    (hundred / "section3/doc007.md").unlink()
    recorder = RecordingEmbedder()
    second = api.pipeline_run(config, runs_dir=runs_dir, embedder=recorder, base="latest")
    assert recorder.texts == []

    diff = api.diff(first.run_id, second.run_id, runs_dir=runs_dir, include_chunks=True)
    assert diff.documents is not None
    assert [(d.uri, d.change) for d in diff.documents] == [("docs/section3/doc007.md", "removed")]
    assert {c.chunk_id for c in diff.documents[0].removed} == gone_ids
    assert diff.phases["connect"].outputs_b == 99

    layout_b = RunLayout(runs_dir / second.run_id)
    store = open_run_store(layout_b, load_run_config(layout_b))
    stored = set(store.all_ids())
    assert stored == {c["chunk_id"] for c in iter_jsonl(layout_b.chunks)}
    assert not stored & gone_ids


def test_an_unchanged_rerun_with_a_base_embeds_nothing_and_diffs_as_identical(hundred: Path, runs_dir: Path):
    config = folder_config(hundred)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    recorder = RecordingEmbedder()
    second = api.pipeline_run(config, runs_dir=runs_dir, embedder=recorder, base=first.run_id)
    assert recorder.calls == []
    assert second.phases["extract"].new == 0 and second.phases["extract"].reused == 100
    assert api.diff(first.run_id, second.run_id, runs_dir=runs_dir, include_chunks=True).identical


def test_pipeline_run_tool_accepts_a_base_run_id(hundred: Path, runs_dir: Path):
    from indexfoundry.app.tools.registry import call_tool

    config = folder_config(hundred)
    first = call_tool("indexfoundry_pipeline_run", config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    recorder = RecordingEmbedder()
    second = call_tool(
        "indexfoundry_pipeline_run",
        {**config, "base_run_id": first.run_id},  # type: ignore[attr-defined]
        runs_dir=runs_dir,
        embedder=recorder,
    )
    assert second.status == "completed"  # type: ignore[attr-defined]
    assert recorder.calls == []


def test_a_rerun_in_place_after_one_edit_extracts_only_that_file_and_matches_a_fresh_run(
    hundred: Path, runs_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from indexfoundry.phases.extract import reuse

    config = folder_config(hundred)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / first.run_id)
    texts = {p.name: p.stat().st_ino for p in layout.extracted_dir.glob("*.txt")}
    (hundred / "section2/doc042.md").write_text(_doc(42, "Usage note 42 was rewritten in place."))
    built: list[str] = []
    build = reuse._build_extract_index
    monkeypatch.setattr(reuse, "_build_extract_index", lambda *a: built.append("index") or build(*a))
    recorder = RecordingEmbedder()
    again = api.pipeline_run(config, runs_dir=runs_dir, run_id=first.run_id, embedder=recorder)
    assert again.status == "completed"
    extract = load_manifest(layout).phases["extract"]
    assert (extract.details["reused"], extract.details["new"]) == (99, 1)
    assert built == ["index"]  # what the last extraction holds is read once, not once per file
    after = {p.name: p.stat().st_ino for p in layout.extracted_dir.glob("*.txt")}
    kept = set(texts) & set(after)
    assert len(kept) == 99 and all(after[name] == texts[name] for name in kept)  # not rewritten
    assert len(recorder.texts) == 1
    scratch_runs = tmp_path / "scratch-runs"
    scratch = api.pipeline_run(config, runs_dir=scratch_runs, embedder=RecordingEmbedder())
    a = artifact_bytes(layout)
    b = artifact_bytes(RunLayout(scratch_runs / scratch.run_id))
    # upsert_stats.json counts the changes since the run's last index (1 updated, not 600 inserted).
    assert {k for k in a if a.get(k) != b.get(k)} == {"indexed/upsert_stats.json"}


@pytest.mark.parametrize("provider", ["chroma", "local"])
def test_a_base_run_after_one_edit_copies_the_base_store_and_upserts_only_that_files_chunks(
    hundred: Path, runs_dir: Path, provider: str
):
    from indexfoundry.app.tools.index import verify_run

    config = folder_config(hundred, index={"embedding_model": "hash", "vector_db": {"provider": provider}})
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert first.phases["index"].status == "completed"
    (hundred / "section2/doc042.md").write_text(_doc(42, "Usage note 42 was rewritten: call widget 42 twice."))
    second = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=first.run_id)
    layout_b = RunLayout(runs_dir / second.run_id)
    stats = load_manifest(layout_b).phases["index"].stats
    edited = [c for c in iter_jsonl(layout_b.chunks) if c["source"]["uri"] == "docs/section2/doc042.md"]
    changed = [c for c in edited if "rewritten" in c["content"]["text"]]
    # The store started as the base's: only the edited chunk is written, its old version pruned.
    assert stats["store_copied_from"] == first.run_id
    assert (stats["store_writes"], stats["store_pruned"]) == (len(changed), 1) == (1, 1)
    assert verify_run(second.run_id, runs_dir).ok
    assert verify_run(first.run_id, runs_dir).ok  # the base's own store is untouched
    hits = api.search("rewritten twice", second.run_id, runs_dir=runs_dir, top_k=1, mode="keyword").results
    assert hits and hits[0].chunk_id == changed[0]["chunk_id"]
    store = open_run_store(layout_b, load_run_config(layout_b))
    try:
        assert set(store.all_ids()) == {c["chunk_id"] for c in iter_jsonl(layout_b.chunks)}
        vectors = {row["chunk_id"]: decode_vector(row["vector"]) for row in iter_jsonl(layout_b.embeddings)}
        for chunk_id in (changed[0]["chunk_id"], edited[0]["chunk_id"]):  # a new vector and a copied one
            if provider == "chroma":
                # Chroma's index is approximate (HNSW), and this test's hash vectors are sparse
                # (ties everywhere), which leaves vectors its graph does not reach: read them by id.
                got = store.collection.get(ids=[chunk_id], include=["embeddings"])  # type: ignore[attr-defined]
                assert got["ids"] == [chunk_id]
                assert np.allclose(got["embeddings"][0], vectors[chunk_id], atol=1e-6)
            else:
                assert store.query(vectors[chunk_id], 1)[0].id == chunk_id
    finally:
        store.close()


@pytest.mark.parametrize("provider", ["chroma", "local"])
def test_a_plain_rerun_after_one_edit_starts_from_the_latest_store_and_ends_like_a_fresh_run(
    hundred: Path, runs_dir: Path, tmp_path: Path, provider: str
):
    """A nightly ``pipeline run config.yaml`` without ``--base`` follows the 'latest' it replaces:
    it copies that run's unchanged extractions and starts from its store, so it extracts one file
    and writes only the edited chunk, and its artifacts and store are those of a run from scratch.
    A forced run, or one with another model, starts from an empty store."""
    from indexfoundry.app.tools.index import verify_run

    config = folder_config(hundred, index={"embedding_model": "hash", "vector_db": {"provider": provider}})
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    (hundred / "section1/doc041.md").write_text(_doc(41, "Usage note 41 was rewritten: call widget 41 twice."))
    second = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert second.status == "completed" and second.run_id != first.run_id
    layout = RunLayout(runs_dir / second.run_id)
    manifest = load_manifest(layout)
    assert manifest.base_run_id is None  # a plain run has no base; it only takes what is unchanged
    assert (manifest.phases["extract"].details["reused"], manifest.phases["extract"].details["new"]) == (99, 1)
    stats = manifest.phases["index"].stats
    assert stats["store_copied_from"] == first.run_id
    assert (stats["store_writes"], stats["store_pruned"]) == (1, 1)
    assert verify_run(second.run_id, runs_dir).ok and verify_run(first.run_id, runs_dir).ok
    store = open_run_store(layout, load_run_config(layout))
    try:
        assert set(store.all_ids()) == {c["chunk_id"] for c in iter_jsonl(layout.chunks)}
    finally:
        store.close()

    fresh = api.pipeline_run(config, runs_dir=tmp_path / "fresh", embedder=RecordingEmbedder())
    assert artifact_bytes(RunLayout(tmp_path / "fresh" / fresh.run_id)) == artifact_bytes(layout)

    forced = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), force=True)
    forced_stats = load_manifest(RunLayout(runs_dir / forced.run_id)).phases["index"].stats
    assert forced_stats["store_copied_from"] is None and forced_stats["store_writes"] == stats["vectors"]
    other_model = folder_config(hundred, index={"embedding_model": "hash:64", "vector_db": {"provider": provider}})
    moved = api.pipeline_run(other_model, runs_dir=runs_dir)
    assert moved.status == "completed"
    assert load_manifest(RunLayout(runs_dir / moved.run_id)).phases["index"].stats["store_copied_from"] is None


def test_a_no_change_run_takes_the_followed_runs_bm25_files_and_an_edit_builds_its_own(
    hundred: Path, runs_dir: Path, tmp_path: Path
):
    """A no-change nightly run (plain or ``--base latest``) has an index phase with the same
    fingerprint as the run it follows, so a rebuilt BM25 index would be the same bytes: it takes
    those files by hard link instead. After an edit it builds its own, equal to a fresh run's."""
    config = folder_config(hundred)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    first_bm25 = RunLayout(runs_dir / first.run_id).keyword_index_dir
    for base in (None, "latest"):
        again = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=base)
        again_bm25 = RunLayout(runs_dir / again.run_id).keyword_index_dir
        names = sorted(p.name for p in first_bm25.iterdir())
        assert names == sorted(p.name for p in again_bm25.iterdir()) and "chunk_ids.json" in names
        assert all((first_bm25 / n).samefile(again_bm25 / n) for n in names)
        hits = api.search("widget 42", again.run_id, runs_dir=runs_dir, top_k=1, mode="keyword").results
        assert hits and hits[0].source.uri == "docs/section2/doc042.md"

    (hundred / "section3/doc043.md").write_text(_doc(43, "Usage note 43 now mentions a frobnicator."))
    edited = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    edited_bm25 = RunLayout(runs_dir / edited.run_id).keyword_index_dir
    assert not (first_bm25 / "chunk_ids.json").samefile(edited_bm25 / "chunk_ids.json")
    fresh = api.pipeline_run(config, runs_dir=tmp_path / "fresh", embedder=RecordingEmbedder())
    assert artifact_bytes(RunLayout(tmp_path / "fresh" / fresh.run_id)) == artifact_bytes(
        RunLayout(runs_dir / edited.run_id)
    )
    hits = api.search("frobnicator", edited.run_id, runs_dir=runs_dir, top_k=1, mode="keyword").results
    assert hits and hits[0].source.uri == "docs/section3/doc043.md"


def _taken_from(layout: RunLayout, phase: str) -> str | None:
    return load_manifest(layout).phases[phase].details.get("taken_from")


def test_a_no_change_run_takes_the_followed_runs_extraction_chunks_and_index_and_an_edit_redoes_them(
    hundred: Path, runs_dir: Path, tmp_path: Path
):
    """Connect (folder sources), extract and normalize write what their fingerprint decides: a
    new run whose phase has the fingerprint of the followed run's completed phase links that
    run's verified artifacts (and the files they list) instead of copying, extracting and
    chunking every document again; its index
    phase copies that run's store and links its embeddings and BM25 files. The bytes are a
    fresh run's; an edit, a forced run or a followed run whose files no longer verify does
    the work."""
    from indexfoundry.app.tools.index import verify_run

    config = folder_config(hundred)
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    followed = RunLayout(runs_dir / first.run_id)
    fresh = api.pipeline_run(config, runs_dir=tmp_path / "fresh", embedder=RecordingEmbedder())
    fresh_bytes = artifact_bytes(RunLayout(tmp_path / "fresh" / fresh.run_id))
    for base in (None, "latest", first.run_id):
        again = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=base)
        layout = RunLayout(runs_dir / again.run_id)
        source = followed if base != first.run_id else RunLayout(runs_dir / first.run_id)
        for phase in ("connect", "extract", "normalize", "index"):
            assert _taken_from(layout, phase) == source.run_id
            assert again.phases[phase].new == 0
        assert layout.chunks.samefile(source.chunks) and layout.documents.samefile(source.documents)
        assert layout.embeddings.samefile(source.embeddings)
        assert verify_run(again.run_id, runs_dir).ok  # the copied store holds the run's rows
        store = open_run_store(layout, load_run_config(layout))
        try:
            assert set(store.all_ids()) == {row["chunk_id"] for row in iter_jsonl(layout.embeddings)}
        finally:
            store.close()
        raws = sorted(p.name for p in layout.raw_dir.glob("*.md"))  # plain runs link them too
        assert len(raws) == 100 and all((layout.raw_dir / n).samefile(source.raw_dir / n) for n in raws)
        texts = sorted(p.name for p in layout.extracted_dir.glob("*.txt"))
        assert len(texts) == 100 and all((layout.extracted_dir / n).samefile(source.extracted_dir / n) for n in texts)
        assert artifact_bytes(layout) == fresh_bytes
        followed = layout

    forced = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base="latest", force=True)
    assert _taken_from(RunLayout(runs_dir / forced.run_id), "normalize") is None
    assert _taken_from(RunLayout(runs_dir / forced.run_id), "index") is None

    # The first run's chunks and embeddings no longer verify (replaced, not written through links).
    for path in (RunLayout(runs_dir / first.run_id).chunks, RunLayout(runs_dir / first.run_id).embeddings):
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(
            data.replace(b"widget number 42", b"widget number 24").replace(b'"dimensions":', b'"dimensions": ')
        )
    again = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=first.run_id)
    layout = RunLayout(runs_dir / again.run_id)
    assert _taken_from(layout, "extract") == first.run_id
    assert _taken_from(layout, "normalize") is None and _taken_from(layout, "index") is None
    assert artifact_bytes(layout) == fresh_bytes

    (hundred / "section3/doc043.md").write_text(_doc(43, "Usage note 43 now mentions a frobnicator."))
    edited = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / edited.run_id)
    assert {_taken_from(layout, phase) for phase in ("connect", "extract", "normalize", "index")} == {None}
    assert edited.phases["extract"].new == 1


def test_an_edit_does_not_read_back_a_store_whose_rows_the_runs_embeddings_record(
    hundred: Path, runs_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A run that starts from a copy of another run's embedded store, or reruns in place over its
    own, knows each stored row's hash from that run's ``embeddings.jsonl``: the upsert writes the
    edited chunk without reading every row's metadata back. A forced run, or a rerun after an
    attempt that died mid-upsert, reads the store."""
    from indexfoundry.app.tools.index import verify_run
    from indexfoundry.backends.stores.chroma import ChromaStore

    reads: list[int] = []
    real = ChromaStore.existing

    def counted(self: ChromaStore, ids: list[str]) -> dict[str, dict[str, object]]:
        reads.append(len(ids))
        return real(self, ids)

    monkeypatch.setattr(ChromaStore, "existing", counted)
    config = folder_config(hundred, index={"embedding_model": "hash"})
    first = api.pipeline_run(config, runs_dir=runs_dir)
    assert all(row.get("row_hash") for row in iter_jsonl(RunLayout(runs_dir / first.run_id).embeddings))
    reads.clear()
    for step, (number, text) in enumerate([(41, "rewritten once"), (42, "rewritten twice"), (43, "and again")]):
        (hundred / f"section{number % 4}/doc{number:03d}.md").write_text(_doc(number, text))
        out = (
            api.pipeline_run(config, runs_dir=runs_dir, base="latest")
            if step == 0
            else api.pipeline_run(config, runs_dir=runs_dir, run_id=out.run_id)  # noqa: F821
        )
        stats = load_manifest(RunLayout(runs_dir / out.run_id)).phases["index"].stats
        assert (stats["store_writes"], stats["store_pruned"]) == (1, 1) and verify_run(out.run_id, runs_dir).ok
    assert reads == []
    fresh = api.pipeline_run(config, runs_dir=tmp_path / "fresh")
    a, b = (
        artifact_bytes(RunLayout(tmp_path / "fresh" / fresh.run_id)),
        artifact_bytes(RunLayout(runs_dir / out.run_id)),
    )
    assert {k for k in a if a.get(k) != b.get(k)} == {"indexed/upsert_stats.json"}  # changes since the last index

    forced = api.pipeline_run(config, runs_dir=runs_dir, run_id=out.run_id, force=True)
    assert forced.status == "completed" and reads and reads[-1] == stats["vectors"]
    reads.clear()
    layout = RunLayout(runs_dir / out.run_id)
    manifest = load_manifest(layout)  # an attempt that died after its 'running' commit
    manifest.phases["index"].status = "running"
    from indexfoundry.storage.atomic import atomic_write_commit_json

    atomic_write_commit_json(layout.manifest, manifest)
    (hundred / "section0/doc044.md").write_text(_doc(44, "edited while the run was dead"))
    again = api.pipeline_run(config, runs_dir=runs_dir, run_id=out.run_id)
    assert again.status == "completed" and reads == [stats["vectors"]] and verify_run(out.run_id, runs_dir).ok


def test_another_model_or_long_chunks_setting_is_another_normalize_output_never_a_taken_one(
    hundred: Path, runs_dir: Path
):
    """chunk_stats.json measures the chunks against the model's window and says whether the index
    phase embeds long ones in windows: a run with other index settings redoes normalize instead of
    taking (or skipping to) the old figures."""
    long_doc = {"long.md": "# Long\n\n" + " ".join(f"word{i} appears in a long paragraph." for i in range(400))}
    write_tree(hundred, long_doc)
    local = folder_config(hundred, index={"embedding_model": "local"})  # a model with a known window
    first = api.pipeline_run(local, runs_dir=runs_dir, embedder=RecordingEmbedder())
    stats = read_json(RunLayout(runs_dir / first.run_id).chunk_stats)["stats"]
    assert stats["chunks_over_window"] > 0 and stats["chunks_embedded_in_windows"] == stats["chunks_over_window"]

    truncated = folder_config(hundred, index={"embedding_model": "local", "long_chunks": "truncate"})
    second = api.pipeline_run(truncated, runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / second.run_id)
    assert _taken_from(layout, "extract") == first.run_id and _taken_from(layout, "normalize") is None
    assert "chunks_embedded_in_windows" not in read_json(layout.chunk_stats)["stats"]

    hashed = folder_config(hundred, index={"embedding_model": "hash"})
    third = api.pipeline_run(hashed, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=second.run_id)
    assert "token_window" not in read_json(RunLayout(runs_dir / third.run_id).chunk_stats)["stats"]
    assert _taken_from(RunLayout(runs_dir / third.run_id), "normalize") is None


class _BrokenEmbedder(RecordingEmbedder):
    """The hash embedder that fails every batch (a model server that went away)."""

    def embed(self, texts: list[str]) -> np.ndarray:
        from indexfoundry.errors import EmbedError

        raise EmbedError("the embedding service did not answer", suggestion="Retry later")


def test_an_index_phase_that_fails_leaves_no_copy_of_the_followed_store(hundred: Path, runs_dir: Path):
    """The followed run's store is copied on a second thread from the run's start; when the
    embedding fails, the phase waits for the copy and removes it, so the failed run's folder
    holds no store, and its rerun in place ends with the run's own rows in its store."""
    config = folder_config(hundred, index={"embedding_model": "hash"})
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    (hundred / "section1/doc041.md").write_text(_doc(41, "Usage note 41 was rewritten: call widget 41 twice."))
    failed = api.pipeline_run(config, runs_dir=runs_dir, embedder=_BrokenEmbedder())
    assert failed.status == "failed"
    layout = RunLayout(runs_dir / failed.run_id)
    assert load_manifest(layout).phases["index"].status == "failed"
    assert not layout.chroma_dir.exists()
    assert not any(p.name.endswith(".seeding") for p in layout.chroma_dir.parent.iterdir())

    from indexfoundry.app.tools.index import verify_run

    resumed = api.pipeline_run(config, runs_dir=runs_dir, run_id=failed.run_id, embedder=RecordingEmbedder())
    assert resumed.status == "completed" and verify_run(failed.run_id, runs_dir).ok
    store = open_run_store(layout, load_run_config(layout))
    try:
        assert set(store.all_ids()) == {c["chunk_id"] for c in iter_jsonl(layout.chunks)}
    finally:
        store.close()
    assert verify_run(first.run_id, runs_dir).ok


def test_a_run_that_stops_before_its_index_phase_leaves_no_copy_of_the_followed_store(hundred: Path, runs_dir: Path):
    """The copy of the followed run's store begins with the run, beside connect, extract and
    normalize; a run that fails before its index phase removes it when it ends."""
    config = folder_config(hundred, index={"embedding_model": "hash"}, stop_on_error=True)
    api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    (hundred / "section1/doc041.md").write_text("")  # no text: EMPTY_CONTENT, and the run stops
    failed = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert failed.status == "failed"
    layout = RunLayout(runs_dir / failed.run_id)
    assert load_manifest(layout).phases["extract"].status == "failed"
    assert "index" not in load_manifest(layout).phases or load_manifest(layout).phases["index"].status != "completed"
    assert not layout.chroma_dir.exists()
    assert not layout.chroma_dir.parent.exists() or not any(
        p.name.endswith(".seeding") for p in layout.chroma_dir.parent.iterdir()
    )
