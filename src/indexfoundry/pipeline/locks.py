"""Locks for what several runs of one runs folder share.

Each run has its own folder and its own run lock, and the embedding cache is a SQLite file
in WAL mode (safe for several processes). The one thing two runs can both write is a vector
store configured outside the run (``vector_db.connection.path`` or a Chroma server): the
index phase upserts, prunes ids that are not in its run and verifies the store, so two runs
doing that at once would prune each other's vectors. ``shared_store_lock`` serialises the
index phase of runs that write the same configured store; runs with their own embedded
store (the default) never wait.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import locks_dir


def shared_store_key(config: VectorDbConfig, base_dir: Path) -> str | None:
    """A key naming the configured store when it lives outside the run, else None."""
    conn = config.connection
    if "host" in conn:
        where: object = {"host": str(conn["host"]), "port": str(conn.get("port", ""))}
    elif "path" in conn:
        where = {"path": str((base_dir / str(conn["path"])).resolve())}
    else:
        return None
    return sha256_json({"provider": config.provider, "where": where, "collection": config.collection})


@contextlib.contextmanager
def shared_store_lock(runs_dir: Path, config: VectorDbConfig) -> Iterator[None]:
    """Hold an exclusive lock on the configured store while the block runs (waits for it)."""
    key = shared_store_key(config, Path.cwd())
    if key is None:
        yield
        return
    folder = locks_dir(runs_dir)
    folder.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = (folder / f"store-{key[:16]}.lock").open("a+")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        handle.close()
