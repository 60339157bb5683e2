"""Where the ``local`` model's ONNX files are cached, what they are named, and their hashes.

Files live in the user cache (``$INDEXFOUNDRY_CACHE_DIR``, else ``$XDG_CACHE_HOME/indexfoundry``,
else ``~/.cache/indexfoundry``), under ``onnx/``, named by the weights hash, the recipe that made
them and a hash of the versions of the tools that shaped the graph. A sidecar ``.json`` beside
each file records its SHA-256 (so a later process does not re-hash it to name the model) and
its recipe.

Each file is made once per machine (``make_once``; ``scripts/setup.sh`` makes the default one):
an export is not byte-identical when redone, and the model id names the file by its hash, so a
file in place is never replaced — a second process waits for the first one's file instead of
putting its own there, which would leave the runs indexed with the first unsearchable.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexfoundry.backends.embedding.local import LOCAL_MODEL_SHA256
from indexfoundry.storage.atomic import atomic_write_json
from indexfoundry.storage.hashing import sha256_file, sha256_text
from indexfoundry.storage.once import exclusive, lock_path, publish_once


def user_cache_dir() -> Path:
    """Per-user cache folder for derived model files (not tied to a runs folder)."""
    explicit = os.environ.get("INDEXFOUNDRY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "indexfoundry"


def _version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def tool_versions(tools: tuple[str, ...]) -> dict[str, str] | None:
    """Versions of the export tools (they shape the exported graph), or None if one is missing."""
    versions = {name: _version(name) for name in tools}
    if any(v is None for v in versions.values()):
        return None
    return {k: str(v) for k, v in versions.items()}


def _stem(recipe: str) -> str:
    return f"all-MiniLM-L6-v2-{LOCAL_MODEL_SHA256[:16]}-{recipe}"


def cached_export(recipe: str, tools: tuple[str, ...]) -> Path | None:
    """Where this machine's export of ``recipe`` is (or will be) cached.

    Keyed by the weights hash, the recipe and a hash of the versions of ``tools``. Without the
    export tools, the newest existing export of the same weights and recipe is used (an ONNX
    file needs only ONNX Runtime to run); None when there is none.
    """
    folder = user_cache_dir() / "onnx"
    versions = tool_versions(tools)
    if versions is not None:
        tag = sha256_text(json.dumps(versions, sort_keys=True))[:12]
        return folder / f"{_stem(recipe)}-x{tag}.onnx"
    existing = sorted(folder.glob(f"{_stem(recipe)}-x*.onnx"), key=lambda p: p.stat().st_mtime)
    return existing[-1] if existing else None


def find_cached(sha_prefix: str, recipes: tuple[str, ...]) -> Path | None:
    """A cached file of one of ``recipes`` whose SHA-256 starts with ``sha_prefix``."""
    folder = user_cache_dir() / "onnx"
    for recipe in recipes:
        for path in sorted(folder.glob(f"{_stem(recipe)}-x*.onnx")):
            if file_sha256(path).startswith(sha_prefix):
                return path
    return None


def sidecar(path: Path) -> Path:
    """The ``.json`` beside a cached file."""
    return path.with_suffix(".json")


def file_sha256(path: Path) -> str:
    """SHA-256 of an exported file, from its sidecar when the size still matches (else hashed)."""
    side = sidecar(path)
    size = path.stat().st_size
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        data = json.loads(side.read_text(encoding="utf-8"))
        if int(data["size"]) == size and isinstance(data["sha256"], str):
            return data["sha256"]
    return sha256_file(path)


def recipe_of(path: Path) -> str:
    """The recipe an export was made with (its sidecar), or "" when the sidecar says nothing."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        recipe = json.loads(sidecar(path).read_text(encoding="utf-8")).get("recipe", "")
        return recipe if isinstance(recipe, str) else ""
    return ""


def make_once(target: Path, make: Callable[[Path], dict[str, Any] | None]) -> Path:
    """``target``, made now by ``make`` unless it is already there.

    One process of the machine at a time makes it (a lock beside it, ``storage/once.py``); the
    others wait, then use its file. ``make(path)`` writes the finished file at ``path`` (a
    temporary name in the same folder) and returns its sidecar record (or None for none); the
    file is put in place only if none is there (first writer wins), then its sidecar.
    """
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(lock_path(target)):
        if target.is_file():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".make-") as tmp:
            finished = Path(tmp) / target.name
            record = make(finished)
            if publish_once(finished, target) and record is not None:
                atomic_write_json(sidecar(target), {**record, "size": target.stat().st_size})
    return target
