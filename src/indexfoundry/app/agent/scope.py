"""What the operator lets agents name: the roots (host folders) and the connections file.

:class:`Roots` resolves a path an agent wrote (relative: against the first root; symlinks
followed) and refuses one that ends outside every root, or that looks like a URL, with
``NOT_FOUND``. :class:`AgentScope` holds the roots, the connections and the server's
private-network allowances (``--allow-private-host``, ``--allow-private-networks``); an
agent's fetches get those allowances plus, when the call names a fetch connection, that
connection's hosts and headers (:meth:`AgentScope.grant`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from indexfoundry.errors import NotFound
from indexfoundry.models.connections import Connections, FetchConnection, FetchGrant


def is_url(value: str) -> bool:
    """True for values that look like a URL (``scheme:...``, any ``://``): never a host path.

    Deliberately broad: a path holding such a value is refused rather than guessed at
    (``x://../../etc`` once slipped past a narrower check). One-letter schemes are Windows drives.
    """
    if "://" in value:
        return True
    scheme = urlsplit(value).scheme if ":" in value else ""
    return len(scheme) > 1


class Roots:
    """Folders an agent may point paths at (resolved once, symlinks followed)."""

    def __init__(self, roots: Iterable[Path]) -> None:
        self.paths: tuple[Path, ...] = tuple(dict.fromkeys(Path(r).expanduser().resolve() for r in roots))
        if not self.paths:
            raise ValueError("at least one root is needed")

    def resolve(self, value: str, key: str = "path") -> Path:
        """``value`` (relative: against the first root) resolved, and inside a root; else ``NOT_FOUND``."""
        if not value or "\0" in value or is_url(value):
            raise self._escape(value, key)
        raw = Path(value).expanduser()
        candidate = (raw if raw.is_absolute() else self.paths[0] / raw).resolve()
        for root in self.paths:
            if candidate == root or root in candidate.parents:
                return candidate
        raise self._escape(value, key)

    def _escape(self, value: str, key: str) -> NotFound:
        return NotFound(
            f"{key} '{value}' is outside the server's roots",
            suggestion=(
                "Use a path inside " + ", ".join(str(p) for p in self.paths) + " (the operator allows more with --root)"
            ),
            details={"key": key},
        )


@dataclass(frozen=True)
class AgentScope:
    """Everything an agent's call may name, set by the operator (never by a tool argument)."""

    roots: Roots
    connections: Connections = field(default_factory=Connections)
    allow_private_networks: bool = False
    allowed_private_hosts: tuple[str, ...] = ()

    def fetch_connection(self, name: str | None, where: str) -> FetchConnection | None:
        return None if name is None else self.connections.get("fetch", name, where)

    def grant(self, fetch: str | None, where: str = "fetch") -> FetchGrant:
        """What an agent's fetch may reach and send: the server's allowances plus fetch connection ``fetch``."""
        connection = self.fetch_connection(fetch, where)
        hosts = [*self.allowed_private_hosts, *(connection.allowed_private_hosts if connection else [])]
        return FetchGrant(
            allow_private_networks=self.allow_private_networks,
            allowed_private_hosts=list(dict.fromkeys(hosts)),
            headers_env=dict(connection.headers_env) if connection else {},
            headers_env_hosts=connection.header_hosts if connection else [],
        )
