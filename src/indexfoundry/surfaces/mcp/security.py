"""The MCP surface's own checks: run ids, bearer tokens, and the HTTP transport's Origin and Host.

What an agent's tool arguments may name is decided by the input schemas themselves
(``models/agent.py``, ``app/agent``): they hold names of the operator's connections and paths
resolved inside the roots, never a URL of a service, a host, a DSN, an env var name or a
header. This module only checks what every tool shares:

- a run id must be a lowercase UUID of this runs folder (or ``latest``): ``RUN_NOT_FOUND``;
- a bearer token is compared in constant time;
- the HTTP transport accepts the loopback origins and hosts (DNS rebinding protection) plus
  the ones the operator adds.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Any

from indexfoundry import api
from indexfoundry.errors import RunNotFound
from indexfoundry.models.ids import is_latest, is_pipeline_name, latest_pipeline

# Top-level arguments that hold run ids.
RUN_ID_KEYS: frozenset[str] = frozenset({"run_id", "run_id_a", "run_id_b", "base_run_id"})


def check_run_id(value: Any, key: str = "run_id", *, allow_latest: bool = False) -> str:
    """A run id must be a lowercase UUID (or, where allowed, 'latest' or 'latest:<pipeline>');
    anything else is RUN_NOT_FOUND."""
    if allow_latest and isinstance(value, str) and is_latest(value):
        pipeline = latest_pipeline(value)
        if pipeline is None or is_pipeline_name(pipeline):
            return value
    if not isinstance(value, str) or not api.is_run_id(value):
        raise RunNotFound(
            f"{key} {value!r} is not a run id",
            suggestion="Run ids are UUIDs: call indexfoundry_run_list to see them",
        )
    return value


def tokens_equal(given: str, expected: str) -> bool:
    """Constant-time comparison of bearer tokens."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def default_allowed_origins(host: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """Origins allowed to call the HTTP transport: the loopback names (any port) and ``extra``."""
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        origins.append(f"http://{host}:{port}")
    return [*origins, *extra]


def default_allowed_hosts(host: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """Host header values accepted (DNS rebinding protection)."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        hosts.append(f"{host}:{port}")
    return [*hosts, *extra]
