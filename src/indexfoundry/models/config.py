"""Configuration models: the pipeline config (the input of a pipeline run) and the global
``indexfoundry.config.json``. The same models produce ``indexfoundry config schema``.

This module is the face every other module imports from; the work lives beside it, one module
per section — ``config_connect``, ``config_extract``, ``config_normalize``, ``config_index``,
``config_serve``, ``config_execution``; the file as a whole in ``config_pipeline``, the global
config in ``config_global`` — and ``config_loading``, the one place that reads config files and
the environment.
"""

from __future__ import annotations

from indexfoundry.models.config_connect import (
    ENV_NAME,
    SECRET_HEADER,
    ConnectConfig,
    CrawlSource,
    FolderSource,
    LlmsTxtSource,
    PdfSource,
    RecordsSpec,
    RenderOptions,
    RepoSource,
    SitemapSource,
    Source,
    UrlSource,
)
from indexfoundry.models.config_execution import ExecutionConfig
from indexfoundry.models.config_extract import ExtractConfig
from indexfoundry.models.config_global import (
    ENV_GLOBAL_CONFIG,
    GLOBAL_CONFIG_FILE,
    ConnectDefaults,
    Defaults,
    ExtractDefaults,
    GlobalConfig,
    IndexDefaults,
    NetworkBounds,
    NormalizeDefaults,
    SecurityConfig,
    StorageConfig,
)
from indexfoundry.models.config_index import IndexConfig, RetryConfig, VectorDbConfig, VectorProvider
from indexfoundry.models.config_loading import (
    inherited_blocked_domains,
    load_global_config,
    load_pipeline_config,
    names_private_host,
    parse_pipeline_config,
    read_config_file,
)
from indexfoundry.models.config_normalize import (
    ChunkStrategy,
    DedupeOptions,
    EnrichRules,
    NormalizeConfig,
    RegexTag,
    SectionPattern,
)
from indexfoundry.models.config_pipeline import PipelineConfig, pipeline_config_schema
from indexfoundry.models.config_serve import (
    ALL_SERVE_ENDPOINTS,
    ApiInfo,
    RateLimitConfig,
    ServeConfig,
    ServeEndpoint,
)

__all__ = [
    "ALL_SERVE_ENDPOINTS",
    "ENV_GLOBAL_CONFIG",
    "ENV_NAME",
    "GLOBAL_CONFIG_FILE",
    "SECRET_HEADER",
    "ApiInfo",
    "ChunkStrategy",
    "ConnectConfig",
    "ConnectDefaults",
    "CrawlSource",
    "DedupeOptions",
    "Defaults",
    "EnrichRules",
    "ExecutionConfig",
    "ExtractConfig",
    "ExtractDefaults",
    "FolderSource",
    "GlobalConfig",
    "IndexConfig",
    "IndexDefaults",
    "LlmsTxtSource",
    "NetworkBounds",
    "NormalizeConfig",
    "NormalizeDefaults",
    "PdfSource",
    "PipelineConfig",
    "RateLimitConfig",
    "RecordsSpec",
    "RegexTag",
    "RenderOptions",
    "RepoSource",
    "RetryConfig",
    "SectionPattern",
    "SecurityConfig",
    "ServeConfig",
    "ServeEndpoint",
    "SitemapSource",
    "Source",
    "StorageConfig",
    "UrlSource",
    "VectorDbConfig",
    "VectorProvider",
    "inherited_blocked_domains",
    "load_global_config",
    "load_pipeline_config",
    "names_private_host",
    "parse_pipeline_config",
    "pipeline_config_schema",
    "read_config_file",
]
