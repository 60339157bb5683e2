"""Canonical hashing: the one helper every id and fingerprint goes through.

``sha256`` over canonical JSON (sorted keys, no spaces, UTF-8, no NaN). Never ``repr()``,
``hash()`` or random ids: the same content gives the same id on every machine and run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

import orjson
from pydantic import BaseModel

# A file's path: a Path, or a string (callers with 20,000 files make no Path for each).
StrPath = str | os.PathLike[str]


def _model_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def canonical_json(value: Any) -> str:
    """Serialise ``value`` to canonical JSON text (sorted keys, compact, UTF-8 kept); pydantic
    models, at any depth, as their JSON dump. Written by orjson where it writes exactly what the
    json module writes (``orjson_exact``: about twice as fast on the rows of a large run)."""
    if orjson_exact(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        except orjson.JSONEncodeError:  # a lone surrogate: the json module writes it escaped
            pass
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_model_json
    )


def orjson_exact(value: Any) -> bool:
    """True when orjson writes ``value`` as the json module does (``json.dumps`` with
    ``ensure_ascii=False``): only dicts with string keys, lists, strings, booleans, None, 64-bit
    integers and floats both print the same way (not NaN, nor very large or very small ones).
    Anything else (models, tuples, subclasses, other types) is left to the json module."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            extend([v for v in item.values() if type(v) is not str])
        elif kind is list:
            extend([v for v in item if type(v) is not str])
        elif kind is str or kind is bool or item is None:
            continue
        elif kind is int:
            if not -(1 << 63) < item < 1 << 63:
                return False
        elif kind is float:
            if not (item == 0 or (math.isfinite(item) and 1e-4 <= abs(item) < 1e16)):
                return False
        else:
            return False
    return True


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hex SHA-256 of text encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    """Hex SHA-256 of the canonical JSON form of ``value``."""
    return sha256_text(canonical_json(value))


def sha256_file(path: StrPath, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in blocks so large files use bounded memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


def doc_id_for(uri: str, content_hash: str, record_id: str | None = None) -> str:
    """Document id: derived from the source content and where it came from.

    ``doc_id`` comes from the source content (docs/design.md, "Ids"); the uri (and the record id for a
    record split from a csv/jsonl file) is hashed in too so that two identical files at
    different places stay two documents with distinct chunk ids.
    """
    key: dict[str, Any] = {"content_hash": content_hash, "uri": uri}
    if record_id is not None:
        key["record_id"] = record_id
    return sha256_json(key)


def chunk_id_for(doc_id: str, byte_start: int, byte_end: int) -> str:
    """Chunk id: ``SHA256(doc_id || byte_start || byte_end)`` (docs/design.md, "Ids")."""
    return sha256_text(f"{doc_id}|{byte_start}|{byte_end}")


def short(digest: str, length: int = 12) -> str:
    """Short form of a hex digest for human output."""
    return digest[:length]
