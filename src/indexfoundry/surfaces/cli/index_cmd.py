"""``indexfoundry index``: rerun the phase, and its single-purpose tool commands."""

from __future__ import annotations

from indexfoundry.surfaces.cli.phase_group import phase_group

app = phase_group("index", "Index phase: embed chunks and upsert them into the vector store.")
