"""The runs dashboard's figures: which runs of a pipeline were and are 'latest'."""

from __future__ import annotations

from indexfoundry.app.history import _mark_latest
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
