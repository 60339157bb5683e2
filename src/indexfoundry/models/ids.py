"""The one run-id type: what a run id looks like, and what may name a run.

- ``RunId``: a run's own id, a lowercase UUID (v7 for new runs, v5 for derived ones), as
  ``runs/<run_id>/`` is named. Tools that write into a run take exactly that.
- ``RunRef``: how a user or an agent names a run to read: its id, ``latest`` (the newest
  completed run), or a unique prefix of at least 4 characters, as ``git`` takes a commit prefix
  (``storage.layout.RunLayout.existing`` resolves a prefix, ``pipeline.runs.resolve_run_id``
  resolves ``latest``). Its schema bounds only the length: a malformed reference is answered
  where it is resolved, as RUN_NOT_FOUND with the way to list runs, the same from every surface.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import StringConstraints

# What names the newest completed run wherever a run is read (the one definition of the word).
LATEST = "latest"
RUN_ID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# A run id prefix: hex digits and dashes, at least 4 characters, as long as an id at most.
RUN_PREFIX_PATTERN = r"^[0-9a-f][0-9a-f-]{3,35}$"
RUN_ID_OR_LATEST_PATTERN = rf"^([0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}|{LATEST})$"

RunId = Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN)]
RunIdOrLatest = Annotated[str, StringConstraints(pattern=RUN_ID_OR_LATEST_PATTERN)]
RunRef = Annotated[str, StringConstraints(min_length=1, max_length=64)]

_RUN_ID_RE = re.compile(RUN_ID_PATTERN)
_RUN_PREFIX_RE = re.compile(RUN_PREFIX_PATTERN)


def is_run_id(value: str) -> bool:
    """True if ``value`` has the shape of a run id (a lowercase UUID)."""
    return bool(_RUN_ID_RE.fullmatch(value))


def is_run_prefix(value: str) -> bool:
    """True if ``value`` could be the prefix of a run id."""
    return bool(_RUN_PREFIX_RE.fullmatch(value))
