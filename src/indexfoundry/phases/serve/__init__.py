"""Phase 5, serve: the retrieval profile (and, with the HTTP API, its OpenAPI spec).

Writes ``served/retrieval_profile.json``. Starting a server is not part of the batch
pipeline unless ``serve.auto_start`` is set.
"""

from __future__ import annotations

from typing import Any

from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.retrieval import AllowedFilter, RetrievalConfig, RetrievalProfile
from indexfoundry.phases.base import Phase, PhaseContext, PhaseOutcome, upstream_artifact_hashes
from indexfoundry.storage.atomic import atomic_write_json

DEFAULT_FILTERS: tuple[AllowedFilter, ...] = (
    AllowedFilter(field="source.uri", operators=["eq", "neq", "in", "contains"]),
    AllowedFilter(field="source.type", operators=["eq", "neq", "in"]),
    AllowedFilter(field="metadata.language", operators=["eq", "neq", "in"]),
    AllowedFilter(field="position.page", operators=["eq", "neq", "gt", "gte", "lt", "lte", "in"]),
    AllowedFilter(field="doc_id", operators=["eq", "neq", "in"]),
    AllowedFilter(field="metadata.heading_path", operators=["eq", "contains"]),
)


def default_profile() -> RetrievalProfile:
    return RetrievalProfile(retrieval_config=RetrievalConfig(), allowed_filters=list(DEFAULT_FILTERS))


class ServePhase(Phase):
    name = "serve"
    version = "1"

    def config_slice(self, config: PipelineConfig) -> Any:
        return {}

    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        return upstream_artifact_hashes(ctx, "index")

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        profile = default_profile()
        atomic_write_json(ctx.layout.retrieval_profile, profile)
        return PhaseOutcome(artifacts=[ctx.layout.retrieval_profile], output_count=1, new=1)
