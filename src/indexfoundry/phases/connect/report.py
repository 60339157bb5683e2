"""What fetching a batch of URLs gave (``FetchReport``): apart from the fetcher, so that a run
over local sources reports "nothing fetched" without loading the network side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.records import RawRecord

if TYPE_CHECKING:
    from indexfoundry.phases.connect.url import UrlResult


@dataclass
class FetchReport:
    """Outcome of fetching a batch of URLs."""

    results: list[UrlResult] = field(default_factory=list)
    errors: list[tuple[str, IndexFoundryError]] = field(default_factory=list)
    # Previous records kept because their URL failed in a way that may pass later.
    stale: list[RawRecord] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)
