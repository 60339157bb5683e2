"""The ``indexfoundry_index_build_profile`` tool: write a run's retrieval profile.

``served/retrieval_profile.json`` says which search modes a run offers, how hybrid search fuses
its two rankings, which metadata fields may be filtered with which operators, and the security
settings. The search service of every surface reads it, so a filter the profile does not
allow is refused the same way over the CLI, HTTP and MCP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from indexfoundry.app.tools.registry import tool
from indexfoundry.errors import ConfigInvalid, NotFound
from indexfoundry.models.base import Strict
from indexfoundry.models.ids import RunId
from indexfoundry.models.retrieval import (
    AllowedFilter,
    HybridConfig,
    RerankerConfig,
    RetrievalConfig,
    RetrievalProfile,
    SearchMode,
    SecurityProfile,
)
from indexfoundry.retrieval.filters import known_field
from indexfoundry.storage.layout import RunLayout, resolve_runs_dir


class ProfileRetrievalConfig(Strict):
    """The profile's ``retrieval_config`` (its defaults: top 10, hybrid only, RRF)."""

    default_top_k: int = Field(default=10, ge=1, le=100, description="Results returned when a search gives no top_k")
    search_modes: list[SearchMode] = Field(
        default_factory=lambda: list[SearchMode](["hybrid"]),
        min_length=1,
        description="Search modes the run offers",
    )
    hybrid_config: HybridConfig | None = Field(
        default=None, description="How hybrid search fuses semantic and keyword rankings"
    )
    reranker: RerankerConfig | None = Field(
        default=None, description="Rerank the top candidates (cross-encoder:<folder>, cohere:<model>, http:<url>)"
    )


class BuildProfileInput(Strict):
    """Input of ``indexfoundry_index_build_profile``."""

    run_id: RunId = Field(description="Run whose retrieval profile is written")
    retrieval_config: ProfileRetrievalConfig = Field(description="Retrieval parameters")
    allowed_filters: list[AllowedFilter] | None = Field(
        default=None, description="Filterable metadata fields (dotted chunk paths) and their operators"
    )
    security: SecurityProfile | None = Field(default=None, description="Authentication and namespace limits")


class BuildProfileOutput(Strict):
    success: bool = Field(description="The profile was written")
    profile_path: str = Field(description="Path of the profile, relative to the run folder")
    profile: RetrievalProfile = Field(description="The profile as written")


def build_profile(payload: BuildProfileInput) -> RetrievalProfile:
    """The retrieval profile a build-profile request describes (``CONFIG_INVALID`` if it cannot be honoured)."""
    config = payload.retrieval_config
    filters = payload.allowed_filters or []
    seen: set[str] = set()
    for flt in filters:
        if not known_field(flt.field):
            raise ConfigInvalid(
                f"allowed_filters: '{flt.field}' is not a chunk field",
                suggestion="Use a dotted chunk path such as source.uri, source.type, position.page, metadata.language",
            )
        if flt.field in seen:
            raise ConfigInvalid(
                f"allowed_filters: '{flt.field}' is listed twice", suggestion="List each field once with all its ops"
            )
        if not flt.operators:
            raise ConfigInvalid(
                f"allowed_filters: '{flt.field}' has no operators", suggestion="List at least one operator"
            )
        seen.add(flt.field)
    return RetrievalProfile(
        retrieval_config=RetrievalConfig(
            default_top_k=config.default_top_k,
            search_modes=list(dict.fromkeys(config.search_modes)),
            hybrid_config=config.hybrid_config or HybridConfig(),
            reranker=config.reranker or RerankerConfig(),
        ),
        allowed_filters=sorted(
            (AllowedFilter(field=f.field, operators=sorted(set(f.operators))) for f in filters),
            key=lambda f: f.field,
        ),
        security=payload.security or SecurityProfile(),
    )


@tool(
    "indexfoundry_index_build_profile",
    BuildProfileInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=False,
)
def index_build_profile(
    payload: BuildProfileInput, runs_dir: str | Path | None = None, **_context: Any
) -> BuildProfileOutput:
    """Define a run's retrieval parameters: search modes, hybrid fusion (alpha, rrf or weighted_sum),
    the metadata fields that may be filtered and with which operators, and security settings.
    Records them in the run's config (serve section) and reruns the serve phase, which writes
    served/retrieval_profile.json and served/openapi.json; searches of the run follow it from then on."""
    from indexfoundry.app.serving import write_openapi
    from indexfoundry.models.config import GlobalConfig
    from indexfoundry.pipeline.runner import execute
    from indexfoundry.storage.manifest import load_run_config

    layout = RunLayout.existing(resolve_runs_dir(runs_dir), payload.run_id)
    if not layout.vector_manifest.is_file():
        raise NotFound(
            f"run {payload.run_id} has no index yet",
            suggestion=f"Run 'indexfoundry index --run-id {payload.run_id}' (or the whole pipeline) first",
        )
    profile = build_profile(payload)
    config = load_run_config(layout)
    serve = config.serve.model_copy(
        update={
            "retrieval": profile.retrieval_config,
            "allowed_filters": profile.allowed_filters,
            "require_auth": profile.security.require_auth,
            "allowed_namespaces": profile.security.allowed_namespaces,
        }
    )
    # The serve phase writes the profile (and the OpenAPI spec that follows it) from the run's
    # config, so a later serve rerun keeps this profile instead of reverting to the defaults.
    output = execute(
        layout,
        config.model_copy(update={"serve": serve}),
        global_config=GlobalConfig(),
        phases=["serve"],
        openapi_writer=write_openapi,
    )
    if output.status == "failed":
        raise ConfigInvalid(
            f"writing the profile of run {payload.run_id} failed: {'; '.join(output.phases['serve'].errors)}",
            suggestion="Check the run with 'indexfoundry run status'",
        )
    return BuildProfileOutput(
        success=True,
        profile_path=layout.retrieval_profile.relative_to(layout.root).as_posix(),
        profile=profile,
    )
