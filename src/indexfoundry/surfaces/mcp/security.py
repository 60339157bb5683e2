"""What an agent may name: run ids, paths, hosts, URLs and environment variables.

An MCP client is an untrusted user: every argument that names something on the host or the
network is bounded here by the server operator's :class:`AgentPolicy` before the tool runs.
Tool arguments can narrow that policy, never widen it. Values are classified by argument name,
wherever they sit in the arguments (a whole pipeline config included):

- run ids (``run_id``, ``base`` ...) must be UUIDs of this runs folder (or ``latest``);
- run-relative paths (``*_path``, ``*_paths``) must stay inside the run folder: no absolute
  paths, no ``..``, no symlink that leads out (checked on the resolved path); never URLs;
- host paths (``path``, ``folder``, ``root``, ``*_file``, ``*_dir``, a store ``connection``'s
  paths) must resolve inside one of the server's roots (``--root``; the docs folder in docs mode;
  else the working directory); a URL-looking value is refused, not skipped; ``source`` (a PDF
  source) may instead be an http(s) URL;
- source URLs (``url``, ``sitemap_url``, ``*_url``) must be http(s); they are fetched later
  through the SSRF guard with the run's network policy, which the agent cannot widen:
  ``allow_private_networks: true`` and ``allowed_private_hosts`` entries are refused unless the
  server allows them (``--allow-private-networks``, ``--allow-private-host``), and a connect
  block without them inherits the server's;
- backend endpoints (``base_url`` of an embedding or rerank API, a store ``connection``'s
  ``url``/``uri``/``host``/``dsn``...) must be one the operator listed with ``--allow-endpoint``:
  the server sends API keys there, so an agent can never choose where a key goes;
- environment variables (every ``*_env`` argument) must be on the operator's allowlist (the
  documented names, plus ``--allow-env NAME``), so an agent cannot choose which secret is read;
- bind addresses (``host`` outside a connection) must be loopback unless ``--allow-bind-host``;
- a Ray executor (``execution.engine: ray``) must name a cluster the operator listed with
  ``--allow-endpoint`` (``auto`` included): the run's documents would be sent there.

Escapes are ``NOT_FOUND`` (the same code ``RunLayout.resolve_inside`` uses); a run id that is
not a UUID, or names no run, is ``RUN_NOT_FOUND``; a host, URL or endpoint outside the policy is
``DOMAIN_BLOCKED``; an environment variable off the allowlist is ``CONFIG_INVALID``.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import urlsplit

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid, DomainBlocked, NotFound, RunNotFound
from indexfoundry.models.ids import LATEST

# Argument names that hold run ids.
RUN_ID_KEYS: frozenset[str] = frozenset({"run_id", "run_id_a", "run_id_b", "base_run_id", "base"})
# Argument names that hold paths on the host (folders and files to ingest, local stores, key
# files); names ending in ``_file`` or ``_dir`` are host paths too.
HOST_PATH_KEYS: frozenset[str] = frozenset({"path", "source", "folder", "root"})
# Host-path arguments that may instead hold an http(s) URL (a PDF source: local path or URL).
URL_OR_PATH_KEYS: frozenset[str] = frozenset({"source"})
# Arguments holding a URL the pipeline fetches (through the SSRF guard, with the run's policy).
SOURCE_URL_KEYS: frozenset[str] = frozenset({"url", "sitemap_url"})
# Arguments naming a backend the server talks to with its credentials (embedding/rerank APIs).
ENDPOINT_KEYS: frozenset[str] = frozenset({"base_url", "endpoint"})
# Inside a store ``connection``: the keys that name the server (every URL-looking value too).
CONNECTION_ENDPOINT_KEYS: frozenset[str] = frozenset({"url", "uri", "host", "dsn", "endpoint", "grpc_host", "grpc_url"})
# Names ending like a path that are not file paths (a URL path prefix, a chunk's headings).
NON_PATH_KEYS: frozenset[str] = frozenset({"base_path", "heading_path"})
# Dicts whose keys are the user's own names (HTTP header names, taxonomy categories): not walked.
OPAQUE_KEYS: frozenset[str] = frozenset({"headers", "taxonomy"})
LOOPBACK_HOSTS: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1"})
# The environment variables the documentation names for keys and passwords: the only ones an
# agent may name by default (``indexfoundry mcp --allow-env NAME`` adds more).
DEFAULT_AGENT_ENV: frozenset[str] = frozenset(
    {"EMBEDDING_API_KEY", "RERANK_API_KEY", "PDF_PASSWORD", "INDEXFOUNDRY_API_KEYS"}
)
# Arguments holding a model spec ``provider:target``: an ``http:`` target is an endpoint, a
# local-model target (a folder the server loads weights from) a host path.
MODEL_SPEC_KEYS: frozenset[str] = frozenset({"model", "embedding_model"})
LOCAL_MODEL_PROVIDERS: frozenset[str] = frozenset({"sentence-transformers", "cross-encoder"})


@dataclass(frozen=True)
class AgentPolicy:
    """The server operator's bounds on what an MCP client's arguments may name.

    Set by ``indexfoundry mcp`` flags (never by a tool argument); the defaults are the strict ones.
    """

    allow_private_networks: bool = False
    allowed_private_hosts: tuple[str, ...] = ()
    allowed_endpoints: tuple[str, ...] = ()
    allowed_env: frozenset[str] = field(default_factory=lambda: DEFAULT_AGENT_ENV)
    allowed_bind_hosts: frozenset[str] = LOOPBACK_HOSTS

    def with_env(self, names: Iterable[str]) -> AgentPolicy:
        """This policy with more allowed environment variable names."""
        return AgentPolicy(
            allow_private_networks=self.allow_private_networks,
            allowed_private_hosts=self.allowed_private_hosts,
            allowed_endpoints=self.allowed_endpoints,
            allowed_env=self.allowed_env | frozenset(names),
            allowed_bind_hosts=self.allowed_bind_hosts,
        )


def is_url(value: str) -> bool:
    """True for values that look like a URL (``scheme:...``, any ``://``): never a host path.

    Deliberately broad: a path argument holding such a value is refused rather than guessed at
    (``x://../../etc`` once slipped past a narrower check). One-letter schemes are Windows drives.
    """
    if "://" in value:
        return True
    scheme = urlsplit(value).scheme if ":" in value else ""
    return len(scheme) > 1


def _http_url(value: str, key: str) -> str:
    """``value`` if it is an absolute http(s) URL with a host, else ``DOMAIN_BLOCKED``."""
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not host:
        raise DomainBlocked(
            f"{key} '{value}' is not an http(s) URL",
            suggestion="Pass an absolute http:// or https:// URL; use a folder source for local files",
            details={"key": key, "reason": "scheme"},
        )
    return value


def check_run_id(value: Any, key: str = "run_id", *, allow_latest: bool = False) -> str:
    """A run id must be a lowercase UUID (or, where allowed, 'latest'); anything else is RUN_NOT_FOUND."""
    if allow_latest and value == LATEST:
        return LATEST
    if not isinstance(value, str) or not api.is_run_id(value):
        raise RunNotFound(
            f"{key} {value!r} is not a run id",
            suggestion="Run ids are UUIDs: call indexfoundry_run_list to see them",
        )
    return value


def _escape(path: str, where: str, suggestion: str) -> NotFound:
    return NotFound(f"path '{path}' is outside {where}", suggestion=suggestion)


def _looks_absolute(value: str) -> bool:
    return PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute() or value.startswith("~")


def resolve_in_run(runs_dir: Path, run_id: str, relative: str) -> Path:
    """Resolve a path relative to the folder of run ``run_id``; absolute, ``..`` and symlink escapes are refused."""
    suggestion = "Pass a path relative to the run folder (e.g. 'normalized/chunks.jsonl'), without '..'"
    if not relative or "\0" in relative or _looks_absolute(relative):
        raise _escape(relative, f"run {run_id}", suggestion)
    if ".." in PurePosixPath(relative.replace("\\", "/")).parts:
        raise _escape(relative, f"run {run_id}", suggestion)
    return api.resolve_in_run(runs_dir, run_id, relative)


class Roots:
    """Folders an agent may point host-path arguments at (resolved once, symlinks followed)."""

    def __init__(self, roots: Iterable[Path]) -> None:
        self.paths: tuple[Path, ...] = tuple(dict.fromkeys(Path(r).expanduser().resolve() for r in roots))
        if not self.paths:
            raise ValueError("at least one root is needed")

    def resolve(self, value: str) -> Path:
        """Resolve ``value`` (relative: against the first root) and require it inside a root."""
        if not value or "\0" in value:
            raise _escape(value, "the server's roots", self._suggestion())
        raw = Path(value).expanduser()
        candidate = (raw if raw.is_absolute() else self.paths[0] / raw).resolve()
        for root in self.paths:
            if candidate == root or root in candidate.parents:
                return candidate
        raise _escape(value, "the server's roots", self._suggestion())

    def _suggestion(self) -> str:
        return (
            "Use a path inside "
            + ", ".join(str(p) for p in self.paths)
            + " (start the server with --root to allow more)"
        )


def guard_arguments(arguments: Any, roots: Roots, runs_dir: Path, policy: AgentPolicy | None = None) -> Any:
    """Check every run id, path, URL, host and env var in a tool's raw arguments (see the module doc).

    Returns the arguments with host paths resolved (so the tool reads exactly the file that was
    checked) and the server's private-network allowances filled into connect blocks that do not
    narrow them. Run-relative paths need the call's ``run_id``; they are checked against that
    run's folder and left as given (tools expect them relative).
    """
    if not isinstance(arguments, dict):
        return arguments
    run_id = arguments.get("run_id")
    run = (runs_dir, run_id) if isinstance(run_id, str) and api.is_run_id(run_id) else None
    return _Guard(roots, run, policy or AgentPolicy()).walk(arguments)


@dataclass(frozen=True)
class _Guard:
    roots: Roots
    run: tuple[Path, str] | None  # (runs folder, run id) of the call's run
    policy: AgentPolicy

    def walk(self, value: Any, key: str | None = None, parent: str | None = None) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in value.items():
                if k == "execution" and isinstance(v, dict) and v.get("engine") == "ray":
                    self.cluster(str(v.get("address", "auto")))
                if k in RUN_ID_KEYS and v is not None:
                    check_run_id(v, k, allow_latest=True)
                    out[k] = v
                elif k in OPAQUE_KEYS:
                    out[k] = v
                else:
                    out[k] = self.walk(v, k, key)
            if "sources" in out or "allow_private_networks" in out:
                self.private_networks(out)
            if out.get("provider") in LOCAL_MODEL_PROVIDERS and isinstance(out.get("model_name"), str):
                out["model_name"] = self.host_path("model_name", out["model_name"])
            return out
        if isinstance(value, list):
            return [self.walk(item, key, parent) for item in value]
        if key is None or not isinstance(value, str) or key in NON_PATH_KEYS:
            return value
        return self.string(key, value, parent)

    def string(self, key: str, value: str, parent: str | None) -> str:
        if key.endswith("_env") or (parent is not None and parent.endswith("_env")):  # headers_env: {h: VAR}
            return self.env(key if key.endswith("_env") else f"{parent}.{key}", value)
        if key in MODEL_SPEC_KEYS:
            return self.model_spec(key, value)
        if parent == "connection":
            return self.connection_value(key, value)
        if key in ENDPOINT_KEYS:
            return self.endpoint(key, value)
        if key in SOURCE_URL_KEYS or key.endswith("_url"):
            return _http_url(value, key)
        if key in HOST_PATH_KEYS or key.endswith(("_file", "_dir")):
            if key in URL_OR_PATH_KEYS and is_url(value):
                return _http_url(value, key)
            return self.host_path(key, value)
        if key.endswith(("_path", "_paths")):
            return self.run_path(value)
        if key == "host":
            return self.bind_host(value)
        if key == "allowed_private_hosts":
            self.private_host(value)
        return value

    def model_spec(self, key: str, value: str) -> str:
        """``http:<url>`` must be an allowed endpoint; a local model folder must be inside the roots."""
        provider, sep, target = value.partition(":")
        if not sep:
            return value
        if provider == "http":
            self.endpoint(key, target)
        elif provider in LOCAL_MODEL_PROVIDERS:
            return f"{provider}:{self.host_path(key, target)}"
        return value

    def host_path(self, key: str, value: str) -> str:
        if is_url(value):
            raise _escape(value, "the server's roots", f"'{key}' takes a local path, not a URL")
        return str(self.roots.resolve(value))

    def run_path(self, value: str) -> str:
        suggestion = "Pass a path relative to the run folder, without '..'"
        if is_url(value):
            raise _escape(value, "the run folder", suggestion)
        if self.run is None:
            # No run to resolve against: still refuse the obvious escapes.
            if _looks_absolute(value) or ".." in PurePosixPath(value.replace("\\", "/")).parts:
                raise _escape(value, "the run folder", suggestion)
            return value
        resolve_in_run(*self.run, value)
        return value

    def connection_value(self, key: str, value: str) -> str:
        """A store connection: its server must be an allowed endpoint, its files inside the roots."""
        path_key = key in HOST_PATH_KEYS or key.endswith(("_file", "_dir", "_path"))
        if path_key or (key == "uri" and not is_url(value)):  # a Milvus Lite file is a ``uri`` too
            return self.host_path(f"connection.{key}", value)
        if key in CONNECTION_ENDPOINT_KEYS or is_url(value):
            return self.endpoint(f"connection.{key}", value, bare_host=key in ("host", "grpc_host"))
        return value

    def endpoint(self, key: str, value: str, *, bare_host: bool = False) -> str:
        """A backend the server connects to with its credentials: only the operator's endpoints."""
        if any(_endpoint_matches(value, allowed, bare_host=bare_host) for allowed in self.policy.allowed_endpoints):
            return value
        raise DomainBlocked(
            f"{key} '{value}' is not an endpoint this server may connect to for an agent",
            suggestion=(
                "The server operator lists the embedding, rerank and store servers agents may use with "
                "`indexfoundry mcp --allow-endpoint URL`; embedded stores (a path inside the roots) need none"
            ),
            details={"key": key, "reason": "endpoint_not_allowed"},
        )

    def cluster(self, address: str) -> None:
        """A Ray cluster the run's documents and texts would be sent to: only the operator's."""
        bare = address.removeprefix("ray://")
        if any(a == address or a.removeprefix("ray://") == bare for a in self.policy.allowed_endpoints):
            return
        raise DomainBlocked(
            f"execution.address '{address}' is not a Ray cluster this server may send an agent's run to",
            suggestion="The server operator lists clusters with `indexfoundry mcp --allow-endpoint HOST:PORT`",
            details={"key": "execution.address", "reason": "endpoint_not_allowed"},
        )

    def env(self, key: str, value: str) -> str:
        if value in self.policy.allowed_env:
            return value
        raise ConfigInvalid(
            f"{key} '{value}': this server does not let agents read that environment variable",
            suggestion=(
                "Use one of " + ", ".join(sorted(self.policy.allowed_env)) + " (the operator adds names with "
                "`indexfoundry mcp --allow-env NAME`)"
            ),
            details={"key": key, "reason": "env_not_allowed"},
        )

    def bind_host(self, value: str) -> str:
        if value.strip("[]").lower() in self.policy.allowed_bind_hosts:
            return value
        raise DomainBlocked(
            f"host '{value}': an agent may only bind servers to loopback on this server",
            suggestion="Use 127.0.0.1 (the operator allows more with `indexfoundry mcp --allow-bind-host HOST`)",
            details={"key": "host", "reason": "bind_not_allowed"},
        )

    def private_host(self, entry: str) -> None:
        if self.policy.allow_private_networks:
            return
        name, _, port = entry.lower().rstrip(".").partition(":")
        for allowed in self.policy.allowed_private_hosts:
            a_name, _, a_port = allowed.lower().rstrip(".").partition(":")
            if a_name == name and (not a_port or a_port == port):
                return
        raise DomainBlocked(
            f"allowed_private_hosts entry '{entry}' is not allowed by this server",
            suggestion=(
                "Private and loopback hosts are blocked against SSRF; the server operator allows them with "
                "`indexfoundry mcp --allow-private-host HOST[:PORT]` or --allow-private-networks"
            ),
            details={"key": "allowed_private_hosts", "reason": "private_not_allowed", "host": entry},
        )

    def private_networks(self, block: dict[str, Any]) -> None:
        """Refuse private-network opt-ins the server did not make; inherit the server's otherwise."""
        wanted = block.get("allow_private_networks")
        if wanted is True and not self.policy.allow_private_networks:
            raise DomainBlocked(
                "allow_private_networks: an agent cannot open private networks on this server",
                suggestion=(
                    "The server operator allows them with `indexfoundry mcp --allow-private-networks` "
                    "or --allow-private-host HOST"
                ),
                details={"key": "allow_private_networks", "reason": "private_not_allowed"},
            )
        if "sources" not in block:
            return
        if wanted is None:
            block["allow_private_networks"] = self.policy.allow_private_networks
        if "allowed_private_hosts" not in block and self.policy.allowed_private_hosts:
            block["allowed_private_hosts"] = list(self.policy.allowed_private_hosts)


def _endpoint_matches(value: str, allowed: str, *, bare_host: bool) -> bool:
    """``value`` is the allowed endpoint or below it (same scheme, host and port; path prefix).

    A bare host (a store's ``host`` key) matches an allowed endpoint with that host.
    """
    try:
        want = urlsplit(allowed if "://" in allowed else f"http://{allowed}")
        if bare_host:
            return (want.hostname or "") == value.strip("[]").lower()
        got = urlsplit(value)
        if got.scheme.lower() != want.scheme.lower() or got.hostname != want.hostname:
            return False
        if want.port is not None and got.port != want.port:
            return False
    except ValueError:
        return False
    prefix = want.path.rstrip("/")
    return not prefix or got.path == prefix or got.path.startswith(prefix + "/")


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
