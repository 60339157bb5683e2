"""The execution section of a pipeline config: local processes or a Ray cluster."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from indexfoundry.models.base import Strict


class ExecutionConfig(Strict):
    """Where a run's per-document and per-batch work executes. Changes how fast, never what:
    it is left out of the frozen run config and of every phase fingerprint."""

    engine: Literal["local", "ray"] = Field(
        default="local", description="local: this machine's processes; ray: a Ray cluster (extra 'ray')"
    )
    address: str = Field(
        default="auto",
        pattern=r"^(auto|ray://[^\s/]+:\d+|[^\s/:]+:\d+)$",
        description="Ray cluster: auto (the cluster this machine belongs to), HOST:PORT of the head node "
        "(GCS port), or ray://HOST:PORT (Ray Client)",
    )
    embed_workers: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Embedding actors (each loads the model once); default: one per CPU "
        "(GPU: one per GPU) in the cluster",
    )
    num_gpus: float = Field(
        default=0, ge=0, le=8, description="GPUs per embedding actor (0: CPU workers; e.g. 1 on GPU nodes)"
    )
    num_cpus: float = Field(default=1, gt=0, le=64, description="CPUs per extract/normalize task and per actor")
    max_retries: int = Field(
        default=3, ge=0, le=20, description="Retries of a task whose worker or node died (then the run fails)"
    )
    raw_transfer: Literal["object_store", "shared_path"] = Field(
        default="object_store",
        description="How raw files reach workers: through Ray's object store, or by path "
        "(every node must see the runs folder at the same path)",
    )
    connect_timeout_s: float = Field(
        default=30, gt=0, le=600, description="How long to wait for the cluster before the run is refused"
    )
