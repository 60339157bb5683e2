"""``indexfoundry normalize``: rerun the phase, and its single-purpose tool commands."""

from __future__ import annotations

from indexfoundry.surfaces.cli.phase_group import phase_group

app = phase_group("normalize", "Normalize phase: chunk, enrich and dedupe.")
