"""PostgreSQL + pgvector through ``psycopg`` 3 and the ``pgvector`` adapter (extra ``pgvector``).

Connection: ``{dsn}`` (a libpq connection string or ``postgresql://`` URL *without* a
password) or ``{dsn_env}`` naming the environment variable that holds one; the password comes
from ``PGPASSWORD`` (libpq reads it), from the variable ``password_env`` names, or from a
``.pgpass`` file; it is never written to the config, a manifest or a log. Optional
``schema`` (default ``public``).

Layout, per collection and namespace (``<base>`` = readable name + hash of both, so two
namespaces never share a table):

- one table per run, ``<base>__<run hash>``: ``id text primary key``, ``embedding vector(d)``,
  ``text``, ``metadata jsonb`` (flat, dotted keys: ``source.uri``), ``run_id`` (the run that
  wrote the row); its HNSW index (``vector_cosine_ops``) and GIN index on ``metadata`` are
  built once the run's rows are all in, just before the switch;
- a view ``<base>``: the published index, what applications read;
- ``indexfoundry_tables``: which table belongs to which collection, namespace and run, its
  model and dimensions, and which one is published.

Atomic publish: a run writes only its own table (in ``upsert``/``insert`` mode it starts as a
copy of the published one, so unchanged vectors are not rewritten); after the index phase has
verified it, ``prepare_publish`` builds its indexes; when the run becomes ``latest`` (the
runner's commit point: after the run guards and the serve phase, never for a failed run) one
transaction in ``publish`` points the view at it. Readers of the view see the old index or
the new one, never a half-written or empty one; a run that dies before the switch leaves the
old index serving. Older tables stay until ``run cleanup`` removes their run. Concurrent
writers (several workers of one run) share the run's table: creation is serialised by an
advisory lock and rows are keyed by id (``INSERT ... ON CONFLICT``), so no id is ever stored
twice.

Keyword search (option): with ``connection.full_text_search: true`` the retrieval service's
keyword leg (``keyword`` mode, and the keyword half of ``hybrid``) is PostgreSQL full-text
search over the stored chunk text instead of the run's BM25 index (BM25 stays the default):
``to_tsvector(<text_search_config>, text)`` (default ``english``) under a GIN expression index
built with the run's other indexes, the query's lexemes OR-ed (any term matches, as in BM25),
ranked by ``ts_rank`` normalised by document length, ties by id, the same SQL filters pushed.

A store opened for a run reads that run's table while it exists (a run's search is the run's
own index), and the published view otherwise. Filters are pushed into the SQL query: ``$eq
$ne $gt $gte $lt $lte $in $nin $contains`` on metadata keys, ``$and``/``$or``; a missing key
never matches.

The connection settings are read in ``pgvector_connect.py``, the names, the registry table and
the filter SQL are in ``pgvector_sql.py``; this module is the store.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.stores import Metadata, StoreHit, model_mismatch, parse_where, translating
from indexfoundry.backends.stores.pgvector_connect import db_error, full_text_search, resolve_dsn, text_search_config
from indexfoundry.backends.stores.pgvector_sql import (
    HNSW_MAX_DIMS,
    REGISTRY,
    base_name,
    create_registry,
    run_table_name,
    to_sql,
)
from indexfoundry.errors import DbError, missing_extra
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.layout import RunLayout


class PgVectorStore:
    """One collection+namespace in PostgreSQL; writes go to ``run_id``'s own table."""

    def __init__(self, config: VectorDbConfig, run_id: str | None) -> None:
        try:
            import psycopg  # noqa: F401
            from pgvector.psycopg import register_vector  # noqa: F401
        except ImportError:
            raise missing_extra("psycopg' and 'pgvector", "pgvector", "the pgvector vector store") from None
        self.config = config
        self.collection = config.collection
        self.namespace = config.namespace or ""
        self.run_id = run_id
        self.schema = str(config.connection.get("schema", "public"))
        self.view = base_name(config.collection, config.namespace)
        self.table = run_table_name(config.collection, config.namespace, run_id) if run_id else None
        self._params, self._password = resolve_dsn(config.connection)
        self._conn: Any = None
        self._lock = threading.RLock()
        self._dimensions: int | None = None

    # ------------------------------------------------------------ connection
    def _connect(self) -> Any:
        import psycopg
        from pgvector.psycopg import register_vector

        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        kwargs: dict[str, Any] = {
            **self._params,
            "connect_timeout": int(self.config.connection.get("connect_timeout", 10)),
        }
        if self._password:
            kwargs["password"] = self._password
        with translating(db_error, "connection"):
            conn = psycopg.connect(autocommit=True, **kwargs)
        try:
            if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                with conn.transaction():
                    # Concurrent CREATE EXTENSION IF NOT EXISTS can still collide: serialise it.
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext('indexfoundry.create_extension'))")
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            self._ensure_registry(conn)
        except Exception as exc:
            conn.close()
            raise db_error("setup", exc) from None
        self._conn = conn
        return conn

    @contextmanager
    def _tx(self, action: str) -> Iterator[Any]:
        """A transaction on the store's connection; any driver error becomes DB_ERROR."""
        with self._lock:
            conn = self._connect()
            with translating(db_error, action), conn.transaction():
                yield conn

    def _ident(self, name: str) -> Any:
        from psycopg import sql

        return sql.Identifier(self.schema, name)

    def _ensure_registry(self, conn: Any) -> None:
        create_registry(conn, self.schema)

    def _registered(self, conn: Any, table: str) -> tuple[str, int, str] | None:
        from psycopg import sql

        row = conn.execute(
            sql.SQL("SELECT embedding_model, dimensions, state FROM {} WHERE table_name = %s").format(
                self._ident(REGISTRY)
            ),
            (table,),
        ).fetchone()
        return (str(row[0]), int(row[1]), str(row[2])) if row else None

    def _published(self, conn: Any) -> tuple[str, str, int] | None:
        """(table, model, dimensions) of the published index of this collection+namespace."""
        from psycopg import sql

        row = conn.execute(
            sql.SQL(
                "SELECT table_name, embedding_model, dimensions FROM {} WHERE view_name = %s AND state = 'published'"
            ).format(self._ident(REGISTRY)),
            (self.view,),
        ).fetchone()
        return (str(row[0]), str(row[1]), int(row[2])) if row else None

    def _read_source(self, conn: Any) -> str:
        """The relation reads use: the run's table while it exists, else the published view."""
        if self.table and self._registered(conn, self.table) is not None:
            return self.table
        if self._published(conn) is None:
            raise DbError(
                f"collection '{self.collection}' has no published index in PostgreSQL"
                + (f" (namespace '{self.namespace}')" if self.namespace else ""),
                suggestion="Run the index phase first",
            )
        return self.view

    def _write_table(self) -> str:
        if self.table is None:
            raise DbError("this pgvector store was opened read-only (no run)", suggestion="Open it for a run")
        return self.table

    # ------------------------------------------------------------ protocol
    def ensure_collection(self, model_id: str, dimensions: int, reset: bool = False) -> None:
        from psycopg import sql

        table = self._write_table()
        with self._tx("create table") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.schema}.{self.view}",))
            published = self._published(conn)
            if published is not None and not reset:
                error = model_mismatch(self.collection, published[1], published[2], model_id, dimensions)
                if error is not None:
                    raise error
            held = self._registered(conn, table)
            if held is not None and (held[0], held[1]) != (model_id, dimensions):
                if not reset:
                    raise model_mismatch(self.collection, held[0], held[1], model_id, dimensions) or DbError(
                        "model mismatch"
                    )
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._ident(table)))
                conn.execute(sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self._ident(REGISTRY)), (table,))
                held = None
            if held is None:
                # A resumed run (or another worker of it) finds its table and keeps what is there.
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._ident(table)))
                conn.execute(
                    sql.SQL(
                        "CREATE TABLE {} (id text PRIMARY KEY, embedding vector({}) NOT NULL, text text,"
                        " metadata jsonb NOT NULL, run_id text NOT NULL)"
                    ).format(self._ident(table), sql.Literal(int(dimensions)))
                )
                if published is not None and not reset and published[0] != table:
                    conn.execute(
                        sql.SQL("INSERT INTO {} SELECT id, embedding, text, metadata, run_id FROM {}").format(
                            self._ident(table), self._ident(published[0])
                        )
                    )
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {} (table_name, collection, namespace, run_id, view_name, embedding_model,"
                        " dimensions) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                    ).format(self._ident(REGISTRY)),
                    (table, self.collection, self.namespace, self.run_id, self.view, model_id, dimensions),
                )
        self._dimensions = dimensions

    def existing(self, ids: list[str]) -> dict[str, Metadata]:
        from psycopg import sql

        if not ids:
            return {}
        out: dict[str, Metadata] = {}
        with self._tx("get") as conn:
            if self.table is None or self._registered(conn, self.table) is None:
                return {}
            for start in range(0, len(ids), 5000):
                rows = conn.execute(
                    sql.SQL("SELECT id, metadata FROM {} WHERE id = ANY(%s)").format(self._ident(self.table)),
                    (ids[start : start + 5000],),
                ).fetchall()
                out.update({str(r[0]): dict(r[1]) for r in rows})
        return out

    def upsert(self, ids: list[str], vectors: Vectors, texts: list[str] | None, metadatas: list[Metadata]) -> None:
        from psycopg import sql
        from psycopg.types.json import Jsonb

        table = self._write_table()
        matrix = np.asarray(vectors, dtype=np.float32)
        # Rows in id order: concurrent writers then lock rows in one order and cannot deadlock.
        order = sorted(range(len(ids)), key=ids.__getitem__)
        rows = [
            (ids[i], matrix[i], texts[i] if texts is not None else None, Jsonb(dict(metadatas[i])), self.run_id)
            for i in order
        ]
        query = sql.SQL(
            "INSERT INTO {} (id, embedding, text, metadata, run_id) "
            "SELECT id, embedding, text, metadata, run_id FROM if_stage ORDER BY id "
            "ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding, text = EXCLUDED.text, "
            "metadata = EXCLUDED.metadata, run_id = EXCLUDED.run_id"
        ).format(self._ident(table))
        with self._tx("upsert") as conn, conn.cursor() as cur:
            # COPY into a staging table, then one INSERT ... ON CONFLICT: far fewer round trips.
            cur.execute(
                sql.SQL(
                    "CREATE TEMP TABLE IF NOT EXISTS if_stage (LIKE {} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
                ).format(self._ident(table))
            )
            with cur.copy(
                "COPY if_stage (id, embedding, text, metadata, run_id) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "vector", "text", "jsonb", "text"])
                for row in rows:
                    copy.write_row(row)
            cur.execute(query)

    def all_ids(self) -> list[str]:
        from psycopg import sql

        with self._tx("list ids") as conn:
            source = self._read_source(conn)
            rows = conn.execute(sql.SQL("SELECT id FROM {}").format(self._ident(source))).fetchall()
        return sorted(str(r[0]) for r in rows)

    def delete(self, ids: list[str]) -> None:
        from psycopg import sql

        if not ids:
            return
        table = self._write_table()
        with self._tx("delete") as conn:
            for start in range(0, len(ids), 5000):
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(self._ident(table)),
                    (ids[start : start + 5000],),
                )

    def count(self) -> int:
        from psycopg import sql

        with self._tx("count") as conn:
            source = self._read_source(conn)
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self._ident(source))).fetchone()
        return int(row[0]) if row else 0

    def query(self, vector: Vectors, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        from psycopg import sql

        if top_k <= 0:
            return []
        condition, params = to_sql(parse_where(where))
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._tx("query") as conn:
            source = self._read_source(conn)
            # Filtered HNSW scans keep going until top_k rows pass the filter (pgvector >= 0.8).
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(1000, max(100, top_k))),))
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)")
            rows = conn.execute(
                sql.SQL(
                    "SELECT id, 1 - (embedding <=> %s) AS score, text, metadata FROM {} WHERE {} "
                    "ORDER BY embedding <=> %s, id LIMIT %s"
                ).format(self._ident(source), condition),
                [q, *params, q, top_k],
            ).fetchall()
        return [StoreHit(id=str(r[0]), score=float(r[1]), text=r[2], metadata=dict(r[3])) for r in rows]

    def max_batch_size(self) -> int:
        return 1000

    def _tsvector(self) -> Any:
        """The indexed expression (a literal configuration, so the planner matches the index)."""
        from psycopg import sql

        return sql.SQL("to_tsvector({}::regconfig, coalesce(text, ''))").format(
            sql.Literal(text_search_config(self.config.connection))
        )

    def keyword_search(self, query: str, top_k: int, where: dict[str, Any] | None = None) -> list[StoreHit]:
        """Full-text search: chunks whose text holds any of the query's lexemes, best ``ts_rank``
        first (normalised by document length), ties by id; filters pushed as in ``query``."""
        from psycopg import sql

        if top_k <= 0:
            return []
        condition, params = to_sql(parse_where(where))
        config = sql.Literal(text_search_config(self.config.connection))
        vector = self._tsvector()
        with self._tx("full-text search") as conn:
            source = self._read_source(conn)
            rows = conn.execute(
                sql.SQL(
                    "WITH q AS (SELECT to_tsquery('simple', coalesce(string_agg(quote_literal(lexeme), ' | '), ''))"
                    " AS query FROM unnest(to_tsvector({config}, %s)) AS t(lexeme, positions, weights)) "
                    "SELECT id, ts_rank({vector}, q.query, 1) AS score, text, metadata FROM {source}, q "
                    "WHERE {vector} @@ q.query AND {condition} ORDER BY score DESC, id LIMIT %s"
                ).format(config=config, vector=vector, source=self._ident(source), condition=condition),
                [query, *params, top_k],
            ).fetchall()
        return [StoreHit(id=str(r[0]), score=float(r[1]), text=r[2], metadata=dict(r[3])) for r in rows]

    def _build_indexes(self, table: str) -> None:
        """HNSW (cosine) and GIN (metadata) indexes, built once over the full table: several times
        faster than growing them row by row during the upsert, and outside the switch, so readers
        of the published view are never blocked by the build."""
        from psycopg import sql

        with self._tx("build indexes") as conn:
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, true)",
                (str(self.config.connection.get("maintenance_work_mem", "256MB")),),
            )
            # Equality filters are ``metadata @> ...``: a GIN index lets the planner find them.
            conn.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (metadata jsonb_path_ops)").format(
                    sql.Identifier(f"{table}_meta"), self._ident(table)
                )
            )
            if full_text_search(self.config.connection):
                conn.execute(
                    sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (({}))").format(
                        sql.Identifier(f"{table}_fts"), self._ident(table), self._tsvector()
                    )
                )
            held = self._registered(conn, table)
            if held is not None and held[1] <= HNSW_MAX_DIMS:
                conn.execute(
                    sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)").format(
                        sql.Identifier(f"{table}_hnsw"), self._ident(table)
                    )
                )

    def prepare_publish(self) -> None:
        """Build the run table's indexes (the switch itself waits for ``publish``)."""
        table = self._write_table()
        with self._tx("publish") as conn:
            if self._registered(conn, table) is None:
                raise DbError(f"run table {table} does not exist", suggestion="Rerun the index phase")
        self._build_indexes(table)

    def publish(self) -> None:
        """Build the run table's indexes if needed, then point the collection's view at it in one
        transaction."""
        from psycopg import sql

        table = self._write_table()
        self.prepare_publish()
        with self._tx("publish") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.schema}.{self.view}",))
            if self._registered(conn, table) is None:
                raise DbError(f"run table {table} does not exist", suggestion="Rerun the index phase")
            published = self._published(conn)
            if published is not None and published[0] != table and not self._same_columns(conn, published[0], table):
                # A view cannot change its column types (another dimension count): replace it.
                conn.execute(sql.SQL("DROP VIEW IF EXISTS {}").format(self._ident(self.view)))
            conn.execute(
                sql.SQL("CREATE OR REPLACE VIEW {} AS SELECT id, embedding, text, metadata, run_id FROM {}").format(
                    self._ident(self.view), self._ident(table)
                )
            )
            conn.execute(
                sql.SQL(
                    "UPDATE {} SET state = CASE WHEN table_name = %s THEN 'published' ELSE 'retired' END, "
                    "published_at = CASE WHEN table_name = %s THEN now() ELSE published_at END "
                    "WHERE view_name = %s AND (table_name = %s OR state = 'published')"
                ).format(self._ident(REGISTRY)),
                (table, table, self.view, table),
            )

    def _same_columns(self, conn: Any, a: str, b: str) -> bool:
        query = (
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
        )
        cols = [conn.execute(query, (f'"{self.schema}"."{name}"',)).fetchall() for name in (a, b)]
        return bool(cols[0] == cols[1])

    def drop_run(self) -> bool:
        """Drop this run's table unless it is the published one (``run cleanup``). True if dropped."""
        from psycopg import sql

        table = self._write_table()
        with self._tx("drop run table") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.schema}.{self.view}",))
            held = self._registered(conn, table)
            if held is None or held[2] == "published":
                return False
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._ident(table)))
            conn.execute(sql.SQL("DELETE FROM {} WHERE table_name = %s").format(self._ident(REGISTRY)), (table,))
        return True

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __del__(self) -> None:
        # Long-lived holders (the search service) drop stores without closing them: never leak
        # the server connection to the garbage collector's warning.
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()


def open_store(config: VectorDbConfig, layout: RunLayout) -> PgVectorStore:
    """Open the PostgreSQL store on the run's own table."""
    return PgVectorStore(config, layout.run_id)


def release_run(config: VectorDbConfig, layout: RunLayout) -> bool:
    """Drop a removed run's table (``run cleanup``), unless it is the published index."""
    store = PgVectorStore(config, layout.run_id)
    try:
        return store.drop_run()
    finally:
        store.close()
