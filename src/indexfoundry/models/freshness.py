"""The answer of ``check_freshness`` (``app/freshness.py``): which sources of a run changed since it read them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from indexfoundry.models.base import Strict

Status = Literal["unchanged", "changed", "gone", "error", "unchecked"]


class SourceFreshness(Strict):
    uri: str = Field(description="Source uri, as in results' source.uri")
    status: Status = Field(description="unchanged, changed, gone, error or unchecked")
    how: str | None = Field(default=None, description="How it was checked: hash, etag, last-modified or bytes")
    fetched_at: str | None = Field(default=None, description="When the run read the source")
    error: str | None = Field(default=None, description="Error code, when the check failed")


class FreshnessReport(Strict):
    """Answer of ``check_freshness``."""

    run_id: str = Field(description="Run checked")
    sources: int = Field(description="Sources of the run (or of the given uris)")
    checked: int = Field(description="Sources checked")
    sample: float | None = Field(default=None, description="Share of the sources checked, when sampling")
    timed_out: bool = Field(default=False, description="max_seconds ran out before every chosen source was checked")
    changed: list[SourceFreshness] = Field(description="Changed or gone sources")
    errors: list[SourceFreshness] = Field(default_factory=list, description="Sources whose check failed")
    unchanged: int = Field(description="Sources checked and unchanged")
    reused: int = Field(default=0, description="Sources answered from a check made within the server's reuse interval")
    limited: bool = Field(
        default=False, description="The rate limit paid for fewer checks than asked: the rest are not checked"
    )
