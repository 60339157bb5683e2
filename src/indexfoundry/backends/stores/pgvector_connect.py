"""The pgvector store's connection settings: the DSN and password (read from the connection and
the environment, never stored), the full-text search options, and how driver failures become
``DB_ERROR``."""

from __future__ import annotations

import os
import re
from typing import Any

from indexfoundry.backends.stores import store_error
from indexfoundry.errors import ConfigInvalid, DbError
from indexfoundry.models.values import parse_dsn

# A text search configuration name (a regconfig such as english, simple, german).
_TS_CONFIG = re.compile(r"^[a-z_][a-z0-9_]*$")


def db_error(action: str, exc: BaseException) -> DbError:
    import psycopg

    # A lost or refused connection, a server shutting down, a serialisation conflict: a rerun may pass.
    sqlstate = getattr(exc, "sqlstate", None) or ""
    recoverable = isinstance(exc, psycopg.OperationalError) or sqlstate.startswith(("08", "40", "57P"))
    return store_error(
        "PostgreSQL",
        action,
        exc,
        recoverable=recoverable,
        suggestion=(
            "Check that the PostgreSQL server is reachable, then rerun the same run (--run-id) to resume it"
            if recoverable
            else "Check the pgvector connection settings and that the vector extension is available"
        ),
        details={"sqlstate": sqlstate} if sqlstate else {},
    )


def full_text_search(conn: dict[str, Any]) -> bool:
    """Whether ``connection`` turns PostgreSQL full-text search on for the keyword leg."""
    return bool(conn.get("full_text_search"))


def text_search_config(conn: dict[str, Any]) -> str:
    """The text search configuration (``connection.text_search_config``, default english)."""
    name = str(conn.get("text_search_config") or "english")
    if not _TS_CONFIG.match(name):
        raise ConfigInvalid(
            f"pgvector: connection.text_search_config '{name}' is not a text search configuration name",
            suggestion="Use one of PostgreSQL's configurations: english, simple, german, ... (\\dF in psql)",
        )
    return name


def resolve_dsn(conn: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(libpq parameters, password) from ``connection``: the DSN parsed once, by libpq's own parser
    (``models.values.parse_dsn``), and connected with as parsed; a password in the DSN is refused."""
    if conn.get("dsn") and conn.get("dsn_env"):
        raise ConfigInvalid(
            "pgvector: set vector_db.connection.dsn or dsn_env, not both", suggestion="Keep one of them"
        )
    if conn.get("dsn_env"):
        name = str(conn["dsn_env"])
        dsn = os.environ.get(name)
        if not dsn:
            raise ConfigInvalid(
                f"pgvector: the environment variable {name} (vector_db.connection.dsn_env) is not set",
                suggestion=f"export {name}='postgresql://user@host:5432/db'",
            )
    elif conn.get("dsn"):
        dsn = str(conn["dsn"])
    else:
        raise ConfigInvalid(
            "pgvector needs vector_db.connection.dsn or dsn_env",
            suggestion="Set connection: {dsn: 'postgresql://user@host:5432/db'} and the password in PGPASSWORD",
        )
    params = parse_dsn(dsn, "the connection string")
    password = None
    if conn.get("password_env"):
        name = str(conn["password_env"])
        password = os.environ.get(name)
        if not password:
            raise ConfigInvalid(
                f"pgvector: the environment variable {name} (vector_db.connection.password_env) is not set",
                suggestion=f"export {name}=...",
            )
    return params, password
