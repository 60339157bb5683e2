"""Vector stores behind one interface. ``chroma`` (embedded or client/server) is the default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.phases.index.embedders import Vectors

Metadata = dict[str, str | int | float | bool]


@dataclass(frozen=True)
class StoreHit:
    """One nearest neighbour: id, cosine similarity score, stored text and metadata."""

    id: str
    score: float
    text: str | None
    metadata: Metadata


class VectorStore(Protocol):
    """What the index phase and the retrieval service need from a vector database."""

    def ensure_collection(self, model_id: str, dimensions: int) -> None: ...
    def existing(self, ids: list[str]) -> dict[str, Metadata]: ...
    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None: ...
    def all_ids(self) -> list[str]: ...
    def delete(self, ids: list[str]) -> None: ...
    def count(self) -> int: ...
    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]: ...
    def max_batch_size(self) -> int: ...


def open_store(config: VectorDbConfig, default_path: Path, run_root: Path) -> VectorStore:
    """Open the configured store. Embedded stores live in the run unless a path is configured."""
    if config.provider == "chroma":
        from indexfoundry.phases.index.stores.chroma import ChromaStore

        return ChromaStore(config, default_path, run_root)
    raise ConfigInvalid(
        f"vector store '{config.provider}' is not available in this build",
        suggestion="Use vector_db.provider: chroma",
    )


def describe_location(config: VectorDbConfig, default_path: Path, run_root: Path) -> dict[str, Any]:
    """Where the vectors are, for ``vector_manifest.json`` (no secrets, run-relative paths)."""
    conn = {k: v for k, v in config.connection.items() if "key" not in k.lower() and "token" not in k.lower()}
    if config.provider == "chroma" and "host" not in conn:
        path = Path(conn.get("path", default_path))
        try:
            conn["path"] = path.resolve().relative_to(run_root.resolve()).as_posix()
        except ValueError:
            conn["path"] = str(path)
    return {"provider": config.provider, "connection": conn}
