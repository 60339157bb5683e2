"""One parser per kind of value a connection is made from: an http(s) URL and a PostgreSQL DSN.

(Embedding model specs have theirs in ``models/embedding.py``: ``parse_embedding_model``.)

The value a check looks at and the value the code connects with must be the same value, or
the two can disagree about where a request goes. So each kind is parsed here, once:

- ``canonical_url``: surrounding whitespace removed, scheme and host lower-cased, the default
  port dropped, percent-escapes of unreserved characters decoded (``%2e`` is ``.``) and dot
  segments resolved (``/v1/../../x`` is ``/x``) by ``yarl``; only http(s), a host, and no
  user or password in the URL. The string it returns is what gets stored and connected to.
- ``parse_dsn``: a libpq connection string or ``postgresql://`` URL, parsed by libpq itself
  (``psycopg.conninfo.conninfo_to_dict``), so every parameter libpq would honour — query
  parameters such as ``?host=…&port=…`` included — is in the dict. A password is refused (it
  belongs in ``PGPASSWORD`` or ``password_env``). The pgvector store connects with this dict.
"""

from __future__ import annotations

from typing import Any

import yarl

from indexfoundry.errors import ConfigInvalid, missing_extra

HTTP_SCHEMES: tuple[str, ...] = ("http", "https")


def canonical_url(value: str, what: str = "") -> str:
    """The canonical form of an absolute http(s) URL (see the module doc); ``ValueError`` otherwise
    (``what`` names the value in the message; a validated field is named by its path anyway)."""
    text = value.strip()
    label = f"{what} " if what else ""
    try:
        url = yarl.URL(text)
    except (TypeError, ValueError):
        raise ValueError(f"{label}'{text}' is not a URL") from None
    if url.scheme.lower() not in HTTP_SCHEMES or not url.host:
        raise ValueError(f"{label}'{text}' is not an absolute http:// or https:// URL")
    if url.user is not None or url.password is not None:
        raise ValueError(f"{label}'{text.split('@', 1)[-1]}' must not hold a user name or password")
    return str(url)


def url_origin(value: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a canonical URL, the port filled in from the scheme."""
    url = yarl.URL(value)
    return url.scheme, url.host or "", int(url.port or (443 if url.scheme == "https" else 80))


def parse_dsn(dsn: str, what: str = "dsn") -> dict[str, Any]:
    """libpq's own reading of ``dsn`` (every parameter, query parameters included); no password."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise missing_extra("psycopg' and 'pgvector", "pgvector", "the pgvector vector store") from None
    try:
        params = dict(conninfo_to_dict(dsn.strip()))
    except Exception:
        # Named without its value: a DSN must never reach a message.
        raise ConfigInvalid(
            f"pgvector: {what} is not a valid connection string", suggestion="Use 'postgresql://user@host:5432/db'"
        ) from None
    if params.get("password"):
        raise ConfigInvalid(
            f"pgvector: {what} contains a password",
            suggestion="Remove it from the DSN and export PGPASSWORD (or set connection.password_env)",
        )
    return params
