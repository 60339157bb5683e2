"""The one run-id type: what a run id looks like, and what may name a run.

- ``RunId``: a run's own id, a lowercase UUID (v7 for new runs, v5 for derived ones), as
  ``runs/<run_id>/`` is named. Tools that write into a run take exactly that.
- ``RunRef``: how a user or an agent names a run to read: its id, ``latest`` (the newest
  completed run of the folder's one pipeline), ``latest:<pipeline>`` (the newest completed run of
  that pipeline, when one runs folder holds several), or a unique prefix of at least 4
  characters, as ``git`` takes a commit prefix (``storage.layout.RunLayout.existing`` resolves a
  prefix, ``pipeline.runs.resolve_run_id`` resolves ``latest``). Its schema bounds only the
  length: a malformed reference is answered where it is resolved, as RUN_NOT_FOUND with the way
  to list runs, the same from every surface.
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
# A pipeline's name: what groups runs, so that 'latest:<pipeline>' names the newest of that pipeline.
PIPELINE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_PIPELINE_NAME_BODY = PIPELINE_NAME_PATTERN[1:-1]
RUN_ID_OR_LATEST_PATTERN = rf"^({RUN_ID_PATTERN[1:-1]}|{LATEST}|{LATEST}:{_PIPELINE_NAME_BODY})$"

RunId = Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN)]
RunIdOrLatest = Annotated[str, StringConstraints(pattern=RUN_ID_OR_LATEST_PATTERN)]
# The longest run reference: 'latest:' and a pipeline name of 64 characters.
RUN_REF_MAX_LENGTH = 72
RunRef = Annotated[str, StringConstraints(min_length=1, max_length=RUN_REF_MAX_LENGTH)]
PipelineName = Annotated[str, StringConstraints(pattern=PIPELINE_NAME_PATTERN)]

_RUN_ID_RE = re.compile(RUN_ID_PATTERN)
_RUN_PREFIX_RE = re.compile(RUN_PREFIX_PATTERN)
_PIPELINE_RE = re.compile(PIPELINE_NAME_PATTERN)


def is_run_id(value: str) -> bool:
    """True if ``value`` has the shape of a run id (a lowercase UUID)."""
    return bool(_RUN_ID_RE.fullmatch(value))


def is_run_prefix(value: str) -> bool:
    """True if ``value`` could be the prefix of a run id."""
    return bool(_RUN_PREFIX_RE.fullmatch(value))


def is_pipeline_name(value: str) -> bool:
    """True if ``value`` may name a pipeline."""
    return bool(_PIPELINE_RE.fullmatch(value))


def pipeline_name_from(text: str) -> str:
    """A pipeline name made from ``text`` (a config file's name, a collection): characters a
    name may not hold become '-', at most 64 of them; 'default' when nothing is left."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:64].rstrip("-._")
    return cleaned or "default"


def is_latest(ref: str) -> bool:
    """True if ``ref`` names the newest completed run: ``latest`` or ``latest:<pipeline>``."""
    return ref == LATEST or ref.startswith(f"{LATEST}:")


def latest_pipeline(ref: str) -> str | None:
    """The pipeline ``latest:<pipeline>`` names (None for a bare ``latest`` or any other ref)."""
    prefix = f"{LATEST}:"
    return ref[len(prefix) :] if ref.startswith(prefix) else None


def latest_of(pipeline: str) -> str:
    """The reference to the newest completed run of ``pipeline``."""
    return f"{LATEST}:{pipeline}"
