"""Run guards (``pipeline/guards.py``): an empty or shrunken run never replaces a good one."""

from __future__ import annotations

import pytest

from indexfoundry.models.manifests import HashList, PhaseManifest, RunManifest
from indexfoundry.pipeline.guards import COUNTED, SHRINK_CHECKED, RunGuards, check_phase_output

BASE_ID = "01a230de-0000-7000-8000-000000000001"
RUN_ID = "01a230de-0000-7000-8000-000000000002"


def _phase(count: int, status: str = "completed") -> PhaseManifest:
    return PhaseManifest(
        started_at="2026-12-01T00:00:00.000Z",
        status=status,  # type: ignore[arg-type]
        phase_version="1",
        tool_version="0",
        config_hash="c",
        fingerprint="f",
        outputs=HashList(count=count),
    )


def _base(documents: int = 100, chunks: int = 1000, status: str = "completed") -> RunManifest:
    return RunManifest(
        run_id=BASE_ID,
        created_at="2026-12-01T00:00:00.000Z",
        status="completed",
        config_hash="c",
        indexfoundry_version="0",
        phases={"extract": _phase(documents, status), "normalize": _phase(chunks, status)},
    )


@pytest.mark.parametrize("phase", sorted(COUNTED))
def test_a_guarded_phase_that_produced_nothing_is_empty_content_naming_what_it_counts(phase: str):
    error = check_phase_output(phase, 0, None, RunGuards(), RUN_ID)
    assert error is not None and error.code == "EMPTY_CONTENT"
    assert error.details == {"phase": phase, COUNTED[phase]: 0}
    assert RUN_ID in (error.suggestion or "")


def test_phases_whose_count_is_not_guarded_may_produce_nothing():
    for phase in ("index", "serve"):
        assert check_phase_output(phase, 0, _base(), RunGuards(), RUN_ID) is None


def test_losing_more_than_the_allowed_share_of_the_bases_chunks_is_run_shrank_with_the_counts():
    error = check_phase_output("normalize", 400, _base(chunks=1000), RunGuards(), RUN_ID)
    assert error is not None and error.code == "RUN_SHRANK"
    assert error.details == {
        "phase": "normalize",
        "base_run_id": BASE_ID,
        "base_count": 1000,
        "count": 400,
        "what": "chunks",
    }


def test_losing_exactly_the_allowed_share_or_less_passes():
    assert check_phase_output("extract", 50, _base(documents=100), RunGuards(max_shrink=0.5), RUN_ID) is None
    assert check_phase_output("extract", 99, _base(documents=100), RunGuards(max_shrink=0.01), RUN_ID) is None
    assert check_phase_output("extract", 98, _base(documents=100), RunGuards(max_shrink=0.01), RUN_ID) is not None


def test_allow_shrink_or_a_max_shrink_of_one_turns_the_shrink_check_off_but_not_the_empty_check():
    for guards in (RunGuards(allow_shrink=True), RunGuards(max_shrink=1.0)):
        assert check_phase_output("extract", 1, _base(documents=100), guards, RUN_ID) is None
        error = check_phase_output("extract", 0, _base(documents=100), guards, RUN_ID)
        assert error is not None and error.code == "EMPTY_CONTENT"


def test_without_a_base_the_run_that_latest_names_is_compared_and_without_either_nothing_is():
    assert check_phase_output("normalize", 1, None, RunGuards(), RUN_ID) is None
    error = check_phase_output("normalize", 1, None, RunGuards(follows=_base(chunks=1000)), RUN_ID)
    assert error is not None and error.code == "RUN_SHRANK"


def test_an_explicit_base_wins_over_the_run_latest_names():
    small_base = _base(chunks=2)
    assert check_phase_output("normalize", 2, small_base, RunGuards(follows=_base(chunks=1000)), RUN_ID) is None


def test_sources_are_never_shrink_checked_and_neither_is_a_base_phase_that_did_not_complete():
    assert "connect" not in SHRINK_CHECKED
    assert check_phase_output("connect", 1, _base(), RunGuards(), RUN_ID) is None
    assert check_phase_output("extract", 1, _base(documents=100, status="failed"), RunGuards(), RUN_ID) is None
    assert check_phase_output("extract", 1, _base(documents=0), RunGuards(), RUN_ID) is None
