"""Run guards: a run that would leave users worse off never becomes ``latest``.

Two checks, made right after the phase that produced the count, so that a bad nightly run
stops early and costs nothing downstream:

* an **empty run** (no source, no document or no chunk, e.g. a wrong glob) fails with
  ``EMPTY_CONTENT``;
* a **shrinking run** that loses more than ``max_shrink`` of the documents or chunks of the
  run it follows fails with ``RUN_SHRANK``, unless ``allow_shrink``. A run follows its base
  (``--base``, including ``--base latest``) or, without one, the current ``latest`` when that
  run was built from the same sources (a plain nightly ``pipeline run config.yaml``).

A failed run is never ``latest`` (``pipeline.runs.latest_run``), so a server following
``latest`` keeps serving the good run.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.manifests import RunManifest

# What each guarded phase's output count counts.
COUNTED: dict[str, str] = {"connect": "sources", "extract": "documents", "normalize": "chunks"}
# What to check when a phase produced nothing (each phase empties for its own reasons).
EMPTY_CHECKS: dict[str, str] = {
    "connect": (
        "Check connect.sources: the folder path (relative to the config file), glob and exclude_patterns, or the URLs"
    ),
    "extract": (
        "Sources were found but none gave text: check their formats (files of a type with no "
        "extractor are skipped) and, for scanned PDFs, extract.pdf_mode: ocr"
    ),
    "normalize": "Documents had text but no chunk was made: check normalize.min_chars and the documents' sizes",
}
# The counts the shrink guard compares with the base run.
SHRINK_CHECKED: frozenset[str] = frozenset({"extract", "normalize"})


@dataclass(frozen=True)
class RunGuards:
    """How strict the guards are for one run (the CLI's ``--allow-shrink``)."""

    allow_shrink: bool = False
    # Share (0-1) of the base run's documents or chunks a run may lose; 1 disables the check.
    max_shrink: float = 0.5
    # Without a base: the run this one would replace as 'latest' (same sources), if any.
    follows: RunManifest | None = None


def check_phase_output(
    phase: str, count: int, base: RunManifest | None, guards: RunGuards, run_id: str
) -> IndexFoundryError | None:
    """The guard error for ``phase`` having produced ``count`` items, or None when it may go on."""
    what = COUNTED.get(phase)
    if what is None:
        return None
    if count == 0:
        return IndexFoundryError(
            f"the {phase} phase produced 0 {what}: an empty run never replaces a good index",
            code="EMPTY_CONTENT",
            suggestion=f"{EMPTY_CHECKS[phase]}; 'indexfoundry run status {run_id}' lists the errors",
            details={"phase": phase, what: 0},
        )
    base = base or guards.follows
    if base is None or guards.allow_shrink or phase not in SHRINK_CHECKED or guards.max_shrink >= 1:
        return None
    base_phase = base.phases.get(phase)  # type: ignore[call-overload]
    if base_phase is None or base_phase.status != "completed":
        return None
    before = int(base_phase.outputs.count)
    if before == 0:
        return None
    lost = (before - count) / before
    if lost <= guards.max_shrink:
        return None
    return IndexFoundryError(
        f"{what} went from {before} in base run {base.run_id} to {count} "
        f"(-{lost:.0%}, more than the allowed {guards.max_shrink:.0%})",
        code="RUN_SHRANK",
        suggestion="If the shrink is intended, rerun with --allow-shrink (or raise max_shrink in the config)",
        details={"phase": phase, "base_run_id": base.run_id, "base_count": before, "count": count, "what": what},
    )
