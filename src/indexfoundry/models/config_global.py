"""``indexfoundry.config.json``: the defaults, storage settings and security bounds shared by
every pipeline run, and the private-network bounds an MCP server puts on its callers' fetches."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.config_normalize import ChunkStrategy


class StorageConfig(Strict):
    runs_dir: str = Field(default="./runs", description="Where runs are kept")
    max_runs: int = Field(default=100, ge=1, description="Runs kept before cleanup removes the oldest")
    cleanup_policy: Literal["fifo"] = Field(default="fifo", description="Which runs cleanup removes first")


class ConnectDefaults(Strict):
    timeout_ms: int = 30000
    max_file_size_mb: float = 50
    user_agent: str = "IndexFoundry/1.0"


class ExtractDefaults(Strict):
    pdf_extractor: Literal["pdfminer.six"] = "pdfminer.six"
    pdf_mode: Literal["layout", "plain", "ocr"] = "layout"
    ocr_engine: Literal["tesseract"] = "tesseract"


class NormalizeDefaults(Strict):
    chunk_strategy: ChunkStrategy = "recursive"
    max_chars: int = 1500
    overlap_chars: int = 150


class IndexDefaults(Strict):
    embedding_provider: str = "local"
    embedding_model: str = "local"
    batch_size: int = 32


class Defaults(Strict):
    connect: ConnectDefaults = Field(default_factory=ConnectDefaults)
    extract: ExtractDefaults = Field(default_factory=ExtractDefaults)
    normalize: NormalizeDefaults = Field(default_factory=NormalizeDefaults)
    index: IndexDefaults = Field(default_factory=IndexDefaults)


class NetworkBounds(Strict):
    """Private networks a caller's fetches may reach at most (an MCP server's agent policy).

    Applied on top of a run's own connect settings: it can only narrow them.
    """

    allow_private_networks: bool = False
    allowed_private_hosts: list[str] = Field(default_factory=list)


class SecurityConfig(Strict):
    allowed_domains: list[str] = Field(default_factory=list)
    blocked_domains: list[str] = Field(default_factory=lambda: ["localhost", "127.0.0.1"])
    max_concurrent_fetches: int = Field(default=5, ge=1)
    allow_private_networks: bool = Field(default=False)


class GlobalConfig(Strict):
    """``indexfoundry.config.json``: defaults shared by every pipeline run."""

    version: str = "1.0.0"
    storage: StorageConfig = Field(default_factory=StorageConfig)
    defaults: Defaults = Field(default_factory=Defaults)
    pinned_versions: dict[str, str] = Field(default_factory=dict)
    security: SecurityConfig = Field(default_factory=SecurityConfig)


GLOBAL_CONFIG_FILE = "indexfoundry.config.json"
ENV_GLOBAL_CONFIG = "INDEXFOUNDRY_CONFIG"
