"""``provider: pgvector`` against a real PostgreSQL server with pgvector started by the tests:
the same answers as Chroma, a clean ``index verify``, atomic publish of a second run while a
reader polls the published view, a crash before the switch that keeps the old index serving,
cleanup of old run tables, concurrent writers, and no password anywhere in the run."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexfoundry import api
from indexfoundry.app.tools.index import verify_run
from indexfoundry.backends.keyword.bm25 import KeywordIndex
from indexfoundry.backends.stores.pgvector import PgVectorStore
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.layout import RunLayout
from tests.conftest import folder_config, write_tree
from tests.integration.test_index_stores import _docs, _index, _same_up_to_ties, _top10


def _pg(dsn: str, **extra: Any) -> dict[str, Any]:
    return {"provider": "pgvector", "collection": "docs", "connection": {"dsn": dsn}, **extra}


def _reader(dsn: str) -> PgVectorStore:
    """A store opened on the published view only, as an application reading the collection."""
    return PgVectorStore(VectorDbConfig.model_validate(_pg(dsn)), None)


def _run(tree, runs_dir: Path, dsn: str, files: dict[str, str | bytes], name: str = "docs", **kwargs: Any) -> Any:
    config = folder_config(tree(files, name), index={"embedding_model": "hash", "vector_db": _pg(dsn)})
    return api.pipeline_run(config, runs_dir=runs_dir, **kwargs)


def _chunk_ids(runs_dir: Path, run_id: str) -> set[str]:
    lines = (runs_dir / run_id / "indexed" / "embeddings.jsonl").read_text().splitlines()
    return {json.loads(line)["chunk_id"] for line in lines}


def test_pgvector_serves_the_same_top10_as_chroma_and_verifies_clean(tree, runs_dir: Path, pg_dsn: str):
    reference = _top10(_index(tree, runs_dir, {"provider": "chroma"}), runs_dir)
    run_id = _index(tree, runs_dir, _pg(pg_dsn))
    for ref, got in zip(reference, _top10(run_id, runs_dir), strict=True):
        _same_up_to_ties(ref, got)
    verified = verify_run(run_id, runs_dir)
    assert verified.ok and verified.expected == verified.present > 0
    reader = _reader(pg_dsn)
    try:
        assert set(reader.all_ids()) == _chunk_ids(runs_dir, run_id)
    finally:
        reader.close()


def test_a_second_run_publishes_atomically_while_a_reader_polls(tree, runs_dir: Path, pg_dsn: str):
    first = _run(tree, runs_dir, pg_dsn, _docs())
    assert first.status == "completed"
    old_ids = _chunk_ids(runs_dir, first.run_id)
    changed = {**_docs(), "extra.md": "# Extra\n\nA new page about caching and warm starts.\n"}
    del changed["theme.md"]
    reader = _reader(pg_dsn)
    seen: list[frozenset[str]] = []
    stop = threading.Event()
    vector = np.ones(384, dtype=np.float32)

    def poll() -> None:
        while not stop.is_set():
            seen.append(frozenset(reader.all_ids()))
            assert len(reader.query(vector, 5)) == 5

    thread = threading.Thread(target=poll)
    thread.start()
    try:
        second = _run(tree, runs_dir, pg_dsn, changed, "docs2")
    finally:
        stop.set()
        thread.join(timeout=60)
    seen.append(frozenset(reader.all_ids()))
    reader.close()
    assert second.status == "completed"
    new_ids = _chunk_ids(runs_dir, second.run_id)
    assert new_ids != old_ids
    assert {s for s in seen} <= {frozenset(old_ids), frozenset(new_ids)}
    assert seen[0] == old_ids and seen[-1] == new_ids
    assert verify_run(second.run_id, runs_dir).ok
    # The first run still reads its own table until cleanup removes it.
    assert verify_run(first.run_id, runs_dir).ok


def test_a_run_that_dies_before_the_switch_leaves_the_old_index_serving_and_resumes(
    tree, runs_dir: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
):
    first = _run(tree, runs_dir, pg_dsn, _docs())
    old_ids = _chunk_ids(runs_dir, first.run_id)
    changed = {**_docs(), "extra.md": "# Extra\n\nA new page about caching.\n"}

    def die(self: PgVectorStore) -> None:
        raise IndexFoundryError("killed before the switch", code="DB_ERROR", recoverable=True)

    monkeypatch.setattr(PgVectorStore, "publish", die)
    failed = _run(tree, runs_dir, pg_dsn, changed, "docs2")
    assert failed.status == "failed"
    reader = _reader(pg_dsn)
    try:
        assert set(reader.all_ids()) == old_ids
        monkeypatch.undo()
        resumed = _run(tree, runs_dir, pg_dsn, changed, "docs2", run_id=failed.run_id)
        assert resumed.status == "completed"
        assert set(reader.all_ids()) == _chunk_ids(runs_dir, failed.run_id) != old_ids
    finally:
        reader.close()


def test_a_run_that_fails_after_its_index_phase_never_switches_the_published_view(tree, runs_dir: Path, pg_dsn: str):
    folder = tree(_docs())
    config = folder_config(folder, index={"embedding_model": "hash", "vector_db": _pg(pg_dsn)})
    first = api.pipeline_run(config, runs_dir=runs_dir)
    old_ids = _chunk_ids(runs_dir, first.run_id)
    reader = _reader(pg_dsn)
    try:
        # A nightly run that shrinks fails with RUN_SHRANK: the view stays on the old table.
        kept = sorted(folder.glob("*.md"))
        for path in kept[1:]:
            path.unlink()
        shrunk = api.pipeline_run(config, runs_dir=runs_dir)
        assert shrunk.status == "failed"
        assert [e.code for e in api.status(shrunk.run_id, runs_dir=runs_dir).errors] == ["RUN_SHRANK"]
        assert set(reader.all_ids()) == old_ids
        # A run whose index phase wrote and verified its table but whose serve phase fails.
        write_tree(folder, {**_docs(), "extra.md": "# Extra\n\nA new page about warm caches.\n"})

        def serve_fails(ctx: Any, phase: Any) -> Any:
            if phase.name == "serve":
                raise IndexFoundryError("the serve phase broke", code="INTERNAL_ERROR")
            return phase.run(ctx)

        failed = api.pipeline_run(config, runs_dir=runs_dir, phase_runner=serve_fails)
        assert failed.status == "failed" and failed.phases["index"].status == "completed"
        assert set(reader.all_ids()) == old_ids
        assert api.resolve_run_id(runs_dir, "latest") == first.run_id
        assert [state for _, state in _tables(pg_dsn)] == ["published", "writing"]
        # Resumed, it completes: the switch happens at its commit point, and it becomes latest.
        resumed = api.pipeline_run(config, runs_dir=runs_dir, run_id=failed.run_id)
        assert resumed.status == "completed"
        assert set(reader.all_ids()) == _chunk_ids(runs_dir, failed.run_id) != old_ids
        assert api.resolve_run_id(runs_dir, "latest") == failed.run_id
        # A rerun of the older run never takes the view back.
        again = api.pipeline_run(config, runs_dir=runs_dir, run_id=first.run_id, force=True)
        assert again.status == "completed"
        assert set(reader.all_ids()) == _chunk_ids(runs_dir, failed.run_id)
    finally:
        reader.close()


def test_keyword_mode_can_use_postgres_full_text_search_and_bm25_stays_the_default(tree, runs_dir: Path, pg_dsn: str):
    import psycopg

    from indexfoundry.models.retrieval import SearchFilter

    vector_db = _pg(pg_dsn, connection={"dsn": pg_dsn, "full_text_search": True})
    run_id = _index(tree, runs_dir, vector_db)
    with psycopg.connect(pg_dsn) as conn:
        indexes = [str(r[0]) for r in conn.execute("SELECT indexname FROM pg_indexes").fetchall()]
    assert any(name.endswith("_fts") for name in indexes)
    hits = api.search("restoring proxies", run_id, runs_dir=runs_dir, top_k=50, mode="keyword").results
    assert hits and all(("restore" in h.text.lower()) or ("proxy" in h.text.lower()) for h in hits)
    assert {h.source.uri.rsplit("/", 1)[-1] for h in hits} == {"backup.md", "deploy.md"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    with psycopg.connect(pg_dsn) as conn:
        (table,) = conn.execute("SELECT table_name FROM indexfoundry_tables WHERE run_id = %s", (run_id,)).fetchone()
        ranks = dict(
            conn.execute(
                f"SELECT id, ts_rank(to_tsvector('english', text), to_tsquery('english', 'restoring | proxies'), 1)"
                f' FROM "{table}" WHERE id = ANY(%s)',
                ([h.chunk_id for h in hits],),
            ).fetchall()
        )
    assert [h.score for h in hits] == pytest.approx([ranks[h.chunk_id] for h in hits], abs=1e-5)  # ts_rank's
    only = [SearchFilter(field="source.uri", op="eq", value=hits[0].source.uri)]
    filtered = api.search("restoring proxies", run_id, runs_dir=runs_dir, top_k=50, mode="keyword", filters=only)
    assert filtered.results and {h.source.uri for h in filtered.results} == {only[0].value}
    assert api.search("zebra", run_id, runs_dir=runs_dir, mode="keyword").results == []
    # Without the option the keyword leg is the run's BM25 index (its scores are not ts_rank's).
    bm25_run = _index(tree, runs_dir, _pg(pg_dsn, collection="docs-bm25"))
    bm25 = api.search("restoring proxies", bm25_run, runs_dir=runs_dir, top_k=50, mode="keyword").results
    index = KeywordIndex.load(RunLayout.for_run(runs_dir, bm25_run))
    expected = index.search("restoring proxies", 50)
    assert [h.chunk_id for h in bm25] == [h.chunk_id for h in expected]
    assert [h.score for h in bm25] == pytest.approx([h.score for h in expected], abs=1e-5)
    # Both match the chunks holding either term (Snowball stems on both sides); only the ranking differs.
    assert {h.chunk_id for h in bm25} == {h.chunk_id for h in hits}
    with pytest.raises(IndexFoundryError) as refused:
        api.validate_config(
            folder_config(
                tree(_docs()), index={"vector_db": {"provider": "chroma", "connection": {"full_text_search": True}}}
            )
        )
    assert refused.value.code == "CONFIG_INVALID"


def _tables(dsn: str) -> list[tuple[str, str]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT table_name, state FROM indexfoundry_tables ORDER BY created_at").fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def test_cleanup_drops_an_old_run_table_but_never_the_published_one(tree, runs_dir: Path, pg_dsn: str):
    first = _run(tree, runs_dir, pg_dsn, _docs())
    second = _run(tree, runs_dir, pg_dsn, {**_docs(), "extra.md": "# Extra\n\nMore.\n"}, "docs2")
    assert [state for _, state in _tables(pg_dsn)] == ["retired", "published"]
    out = api.cleanup(runs_dir=runs_dir, older_than_days=0, dry_run=False)
    assert [item.run_id for item in out.removed] == [first.run_id]
    assert [state for _, state in _tables(pg_dsn)] == ["published"]
    assert verify_run(second.run_id, runs_dir).ok


def test_concurrent_writers_of_one_run_never_store_an_id_twice(pg_dsn: str):
    config = VectorDbConfig.model_validate(_pg(pg_dsn))
    rng = np.random.default_rng(7)
    ids = [f"c{i:04d}" for i in range(600)]
    vectors = rng.standard_normal((600, 16)).astype(np.float32)
    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        store = PgVectorStore(config, "run-a")
        try:
            store.ensure_collection("hash", 16)
            # Overlapping halves, written in different orders by each worker.
            part = list(range(offset, offset + 400))
            for start in range(0, len(part), 50):
                rows = part[start : start + 50]
                store.upsert([ids[i] for i in rows], vectors[rows], None, [{"n": i} for i in rows])
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=worker, args=(offset,)) for offset in (0, 200, 100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    store = PgVectorStore(config, "run-a")
    try:
        assert store.all_ids() == ids
        assert store.count() == 600
    finally:
        store.close()


def test_a_password_in_the_dsn_is_refused_and_dsn_env_never_reaches_the_run(
    tree, runs_dir: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
):
    with pytest.raises(IndexFoundryError) as refused:
        PgVectorStore(VectorDbConfig.model_validate(_pg("postgresql://app:s3cret@127.0.0.1/db")), "r")
    assert refused.value.code == "CONFIG_INVALID"
    assert "s3cret" not in str(refused.value.to_dict())
    monkeypatch.setenv("APP_PG_DSN", pg_dsn)
    monkeypatch.setenv("PGPASSWORD", "not-needed-on-a-socket")
    vector_db = {"provider": "pgvector", "collection": "docs", "connection": {"dsn_env": "APP_PG_DSN"}}
    run_id = _index(tree, runs_dir, vector_db)
    written = "".join(p.read_text(errors="replace") for p in (runs_dir / run_id).rglob("*") if p.is_file())
    assert "APP_PG_DSN" in written
    assert pg_dsn not in written and "not-needed-on-a-socket" not in written
    assert verify_run(run_id, runs_dir).ok
