"""The pgvector store's schema and SQL: the names of its views and run tables, the registry
table of which table holds which run, and the filter tree translated into SQL conditions on the
flat ``metadata`` jsonb column."""

from __future__ import annotations

import re
from typing import Any

from indexfoundry.backends.stores import Compare, Filter, Logic
from indexfoundry.storage.hashing import sha256_text

REGISTRY = "indexfoundry_tables"
# pgvector's HNSW index takes up to 2,000 dimensions of type vector; larger vectors are searched exactly.
HNSW_MAX_DIMS = 2000
_SLUG = re.compile(r"[^a-z0-9]+")


def _slug(value: str, limit: int) -> str:
    return _SLUG.sub("_", value.lower()).strip("_")[:limit] or "x"


def base_name(collection: str, namespace: str | None) -> str:
    """The view's name: readable, and unique per (collection, namespace) through a hash."""
    readable = _slug(collection, 24) + (f"_{_slug(namespace, 10)}" if namespace else "")
    return f"if_{readable}_{sha256_text(collection + chr(0) + (namespace or ''))[:8]}"


def run_table_name(collection: str, namespace: str | None, run_id: str) -> str:
    """The table one run writes (at most 59 characters: PostgreSQL identifiers stop at 63)."""
    return f"{base_name(collection, namespace)}__{sha256_text(run_id)[:12]}"


def create_registry(conn: Any, schema: str) -> None:
    """Create the registry table in ``schema`` unless it exists (serialised by an advisory lock)."""
    from psycopg import sql

    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{schema}.{REGISTRY}",))
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} ("
                " table_name text PRIMARY KEY, collection text NOT NULL, namespace text NOT NULL,"
                " run_id text NOT NULL, view_name text NOT NULL, embedding_model text NOT NULL,"
                " dimensions integer NOT NULL, state text NOT NULL DEFAULT 'writing',"
                " created_at timestamptz NOT NULL DEFAULT now(), published_at timestamptz)"
            ).format(sql.Identifier(schema, REGISTRY))
        )


def to_sql(flt: Filter | None) -> tuple[Any, list[Any]]:
    """Our filter tree → (SQL condition, parameters) on the flat ``metadata`` jsonb column."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    if flt is None:
        return sql.SQL("TRUE"), []
    if isinstance(flt, Logic):
        parts = [to_sql(part) for part in flt.parts]
        joiner = sql.SQL(" AND " if flt.op == "$and" else " OR ")
        params = [p for _, part_params in parts for p in part_params]
        return sql.SQL("(") + joiner.join(c for c, _ in parts) + sql.SQL(")"), params
    assert isinstance(flt, Compare)
    key, op, value = flt.field, flt.op, flt.value
    if op == "$eq":
        return sql.SQL("(metadata @> %s)"), [Jsonb({key: value})]
    if op == "$ne":
        return sql.SQL("(metadata ? %s AND NOT metadata @> %s)"), [key, Jsonb({key: value})]
    if op in ("$in", "$nin"):
        values = [Jsonb(v) for v in value]
        if op == "$in":
            return sql.SQL("(metadata -> %s = ANY(%s::jsonb[]))"), [key, values]
        return sql.SQL("(metadata ? %s AND NOT (metadata -> %s = ANY(%s::jsonb[])))"), [key, key, values]
    if op == "$contains":
        # A substring of a string value; a present value of another type is left to the caller's check.
        return sql.SQL(
            "(metadata ? %s AND (jsonb_typeof(metadata -> %s) <> 'string' OR strpos(metadata ->> %s, %s) > 0))"
        ), [
            key,
            key,
            key,
            str(value),
        ]
    symbol = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    if isinstance(value, bool):
        return sql.SQL("FALSE"), []
    if isinstance(value, int | float):
        return sql.SQL("(jsonb_typeof(metadata -> %s) = 'number' AND (metadata ->> %s)::numeric " + symbol + " %s)"), [
            key,
            key,
            value,
        ]
    # Strings compare by code point, as everywhere else.
    return sql.SQL("(jsonb_typeof(metadata -> %s) = 'string' AND (metadata ->> %s) COLLATE \"C\" " + symbol + " %s)"), [
        key,
        key,
        str(value),
    ]
