"""The runs dashboard's figures: which pipeline a run belongs to, which runs were and are 'latest'."""

from __future__ import annotations

from indexfoundry.app.history import _mark_latest, pipeline_of
from indexfoundry.models.history import RunHistoryEntry


def entry(run_id: str, status: str, created: str, completed: str | None) -> RunHistoryEntry:
    return RunHistoryEntry.model_validate(
        {
            "run_id": run_id,
            "pipeline": "p",
            "status": status,
            "created_at": created,
            "completed_at": completed,
            "duration_ms": 1,
            "phases": {},
            "sources": 1,
            "documents": 1,
            "chunks": 1,
            "vectors": 1,
            "errors": 0,
            "first_errors": [],
            "became_latest": False,
            "latest": False,
        }
    )


def test_a_run_of_the_same_collection_and_sources_is_the_same_pipeline_and_another_source_is_not():
    config = {"connect": {"sources": [{"type": "folder", "path": "/srv/docs"}]}, "index": {"vector_db": {}}}
    key, name = pipeline_of(config)
    assert name == "indexfoundry (docs)"
    assert pipeline_of({**config, "normalize": {"max_chars": 900}})[0] == key  # other settings: same pipeline
    other = {"connect": {"sources": [{"type": "url", "url": "https://example.org/a"}]}}
    assert pipeline_of(other)[0] != key
    named = {**config, "index": {"vector_db": {"collection": "handbook"}}}
    assert pipeline_of(named)[1] == "handbook (docs)" and pipeline_of(named)[0] != key


def test_latest_is_the_newest_completed_run_and_a_run_overtaken_before_it_finished_never_became_latest():
    runs = [
        entry("a", "completed", "2026-12-01T00:00:00Z", "2026-12-01T00:01:00Z"),
        entry("b", "completed", "2026-12-02T00:00:00Z", "2026-12-02T05:00:00Z"),  # finished after c
        entry("c", "completed", "2026-12-02T01:00:00Z", "2026-12-02T02:00:00Z"),
        entry("d", "failed", "2026-12-03T00:00:00Z", None),  # refused: never latest
    ]
    _mark_latest(runs)
    assert [(r.run_id, r.latest, r.became_latest) for r in runs] == [
        ("a", False, True),
        ("b", False, False),
        ("c", True, True),
        ("d", False, False),
    ]
