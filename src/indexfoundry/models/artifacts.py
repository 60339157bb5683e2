"""Typed, versioned models of the JSON artifacts a run writes besides its manifest.

Every one carries ``schema_version``; ``storage/artifacts.py`` writes and reads them (a file
from a newer IndexFoundry is refused with one clear error). Field order and ``None`` values
are kept as written before the models existed, so existing fields stay byte-identical.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from indexfoundry.models.base import Strict


class VersionedArtifact(Strict):
    """Base of a versioned artifact: ``SCHEMA_VERSION`` is the newest format this code reads."""

    SCHEMA_VERSION: ClassVar[int] = 1
    ARTIFACT: ClassVar[str] = "artifact"

    schema_version: int = Field(default=1, description="Format version of this file")


class VectorManifest(VersionedArtifact):
    """``indexed/vector_manifest.json``: where a run's vectors are and what produced them."""

    ARTIFACT: ClassVar[str] = "vector_manifest.json"

    collection: str = Field(description="Collection (or index/table) name")
    namespace: str | None = Field(default=None, description="Namespace inside the collection")
    model_used: str = Field(description="Embedding model id")
    dimensions: int = Field(description="Vector dimensions")
    metadata_schema: list[str] = Field(default_factory=list, description="Metadata fields stored with each vector")
    store_text: bool = Field(default=True, description="Whether chunk texts are stored with the vectors")
    store: dict[str, Any] = Field(default_factory=dict, description="Where the store is (no secrets)")
    vectors: int = Field(description="Vectors of the run")


class UpsertChanges(Strict):
    """Vectors changed relative to the run's last committed index (or sent, for the tool)."""

    vectors: int | None = Field(default=None, description="Vectors of the run")
    vectors_sent: int | None = Field(default=None, description="Vectors written to the store")
    vectors_inserted: int = Field(description="New vectors")
    vectors_updated: int = Field(description="Vectors rewritten")
    vectors_unchanged: int = Field(description="Vectors left alone")
    vectors_pruned: int = Field(description="Vectors removed (no longer in the run)")
    vectors_failed: int = Field(default=0, description="Vectors that could not be written")


class UpsertStats(VersionedArtifact):
    """``indexed/upsert_stats.json``: what the upsert into the vector store did."""

    ARTIFACT: ClassVar[str] = "upsert_stats.json"

    stats: UpsertChanges = Field(description="Vector counts")
    upsert_mode: Literal["upsert", "insert", "replace"] = Field(description="Upsert mode used")
    batch_size: int = Field(description="Vectors per store request")
    verified: bool = Field(description="The store's ids were checked against the run")
    extra_ids: int = Field(description="Store ids that are not the run's (insert mode: other runs')")


class FrozenConfigFile(VersionedArtifact):
    """``config.json``: the run's frozen pipeline config, plus its ``schema_version``.

    Only the version is modelled here; the rest is a ``PipelineConfig`` (``storage.manifest``).
    """

    ARTIFACT: ClassVar[str] = "config.json"
