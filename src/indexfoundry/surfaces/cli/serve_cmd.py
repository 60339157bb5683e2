"""``indexfoundry serve``: rerun the phase, and its single-purpose tool commands."""

from __future__ import annotations

from indexfoundry.surfaces.cli.phase_group import phase_group

app = phase_group("serve", "Serve phase: retrieval profile, OpenAPI spec, HTTP server.")
