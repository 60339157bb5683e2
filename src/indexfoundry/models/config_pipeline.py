"""The pipeline config file (YAML or JSON): one section per phase, plus where the work executes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.config_connect import ConnectConfig
from indexfoundry.models.config_execution import ExecutionConfig
from indexfoundry.models.config_extract import ExtractConfig
from indexfoundry.models.config_index import IndexConfig
from indexfoundry.models.config_normalize import NormalizeConfig
from indexfoundry.models.config_serve import ServeConfig
from indexfoundry.models.ids import PipelineName, RunId, pipeline_name_from


class PipelineConfig(Strict):
    """A pipeline config file (YAML or JSON): one per indexed corpus."""

    name: PipelineName | None = Field(
        default=None,
        description=(
            "The pipeline's name: runs of one pipeline share it, and 'latest:<name>' is its newest "
            "completed run (default: the config file's name without its extension and a '.config' "
            "suffix; for a config given as data, index.vector_db.collection)"
        ),
    )
    run_id: RunId | None = Field(default=None, description="Run id to (re)use; new UUID v7 if omitted")
    connect: ConnectConfig
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    normalize: NormalizeConfig = Field(default_factory=NormalizeConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    force: bool = Field(default=False, description="Rerun every phase even if unchanged")
    stop_on_error: bool = Field(
        default=False, description="Stop the run at the first failed document instead of going on"
    )
    max_shrink: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Share of its base run's documents or chunks a run may lose before it fails (1: no check)",
    )
    execution: ExecutionConfig = Field(
        default_factory=ExecutionConfig, description="Executor: local processes or a Ray cluster"
    )

    def pipeline_name(self) -> str:
        """The pipeline the config's runs belong to: its ``name``, else its collection's name."""
        return self.name or pipeline_name_from(self.index.vector_db.collection)


def pipeline_config_schema() -> dict[str, Any]:
    """JSON Schema of the pipeline config file, for editor validation."""
    schema: dict[str, Any] = PipelineConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "IndexFoundry pipeline config"
    return schema
