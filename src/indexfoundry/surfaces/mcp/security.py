"""What an agent may name: run ids, paths inside a run, paths inside the configured roots.

Every path an agent passes to a tool is checked here before the tool runs:

- run-relative paths (``pdf_path``, ``chunks_path``, ``input_paths`` ...) must stay inside the
  run folder: no absolute paths, no ``..``, no symlink that leads out (checked on the resolved
  path);
- host paths (a folder or PDF to ingest: ``path``, ``source``) must resolve inside one of the
  server's roots (``--root``; the docs folder in docs mode; else the working directory).

Escapes are ``NOT_FOUND`` (the same code ``RunLayout.resolve_inside`` uses); a run id that is
not a UUID, or names no run, is ``RUN_NOT_FOUND``.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from indexfoundry.errors import NotFound, RunNotFound
from indexfoundry.storage.layout import RunLayout, is_run_id

# Argument names that hold run ids.
RUN_ID_KEYS: frozenset[str] = frozenset({"run_id", "run_id_a", "run_id_b", "base_run_id", "base"})
# Argument names that hold paths on the host (folders and files to ingest, local stores, key
# files); names ending in ``_file`` are host paths too.
HOST_PATH_KEYS: frozenset[str] = frozenset({"path", "source", "folder", "root"})
LATEST = "latest"


def is_url(value: str) -> bool:
    """True for ``scheme://...`` values (URLs are not paths)."""
    head, sep, _ = value.partition("://")
    return bool(sep) and head.isascii() and head.replace("+", "").replace("-", "").replace(".", "").isalnum()


def check_run_id(value: Any, key: str = "run_id", *, allow_latest: bool = False) -> str:
    """A run id must be a lowercase UUID (or, where allowed, 'latest'); anything else is RUN_NOT_FOUND."""
    if allow_latest and value == LATEST:
        return LATEST
    if not isinstance(value, str) or not is_run_id(value):
        raise RunNotFound(
            f"{key} {value!r} is not a run id",
            suggestion="Run ids are UUIDs: call indexfoundry_run_list to see them",
        )
    return value


def _escape(path: str, where: str, suggestion: str) -> NotFound:
    return NotFound(f"path '{path}' is outside {where}", suggestion=suggestion)


def _looks_absolute(value: str) -> bool:
    return PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute() or value.startswith("~")


def resolve_in_run(layout: RunLayout, relative: str) -> Path:
    """Resolve a path relative to the run folder; absolute, ``..`` and symlink escapes are refused."""
    suggestion = "Pass a path relative to the run folder (e.g. 'normalized/chunks.jsonl'), without '..'"
    if not relative or "\0" in relative or _looks_absolute(relative):
        raise _escape(relative, f"run {layout.run_id}", suggestion)
    if ".." in PurePosixPath(relative.replace("\\", "/")).parts:
        raise _escape(relative, f"run {layout.run_id}", suggestion)
    return layout.resolve_inside(relative)


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


def guard_arguments(arguments: Any, roots: Roots, runs_dir: Path) -> Any:
    """Check every run id and path in a tool's raw arguments; returns them with host paths resolved.

    Run-relative paths need the call's ``run_id``; they are checked against that run's folder
    and left as given (tools expect them relative). Host paths are replaced by their resolved
    absolute form, so the tool reads exactly the file that was checked.
    """
    if not isinstance(arguments, dict):
        return arguments
    run_id = arguments.get("run_id")
    layout = None
    if isinstance(run_id, str) and is_run_id(run_id):
        layout = RunLayout.for_run(runs_dir, run_id)
    return _walk(arguments, roots, layout)


def _walk(value: Any, roots: Roots, layout: RunLayout | None, key: str | None = None) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in RUN_ID_KEYS and v is not None:
                check_run_id(v, k, allow_latest=True)
                out[k] = v
            else:
                out[k] = _walk(v, roots, layout, k)
        return out
    if isinstance(value, list):
        return [_walk(item, roots, layout, key) for item in value]
    if not isinstance(value, str) or key is None:
        return value
    if key in HOST_PATH_KEYS or key.endswith("_file"):
        return value if is_url(value) else str(roots.resolve(value))
    if key.endswith(("_path", "_paths")):
        if is_url(value):
            return value
        if layout is None:
            # No run to resolve against: still refuse the obvious escapes.
            if _looks_absolute(value) or ".." in PurePosixPath(value.replace("\\", "/")).parts:
                raise _escape(value, "the run folder", "Pass a path relative to the run folder, without '..'")
            return value
        resolve_in_run(layout, value)
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
