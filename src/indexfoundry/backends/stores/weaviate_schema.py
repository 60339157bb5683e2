"""How IndexFoundry's records map onto Weaviate objects: collection names, object uuids and
property names.

One Weaviate collection per IndexFoundry collection and namespace
(``If_<collection>_<namespace>_<hash>``, so namespaces never collide); objects have the uuid5 of
the chunk id and the properties ``if_chunk_id`` and ``if_text``; each metadata key is a property
per value type — ``m<t|i|n|b>_<encoded key>`` for text, int, number and boolean values, the key
encoded reversibly into Weaviate's ``[_0-9a-z]`` names (``source.uri`` → ``mt_source_duri``).
"""

from __future__ import annotations

import re
import uuid as uuid_lib
from typing import Any

from indexfoundry.backends.stores import Metadata
from indexfoundry.storage.hashing import sha256_text

ID_PROPERTY = "if_chunk_id"
TEXT_PROPERTY = "if_text"
_UUID_NAMESPACE = uuid_lib.UUID("6f1c7c1e-5d1a-4a59-9d6b-3f1f0e0c2a11")
_SLUG = re.compile(r"[^a-z0-9]+")
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# Value type tags of metadata properties: tag -> Weaviate data type.
TYPES = {"t": "text", "i": "int", "n": "number", "b": "boolean"}


def collection_name(collection: str, namespace: str | None) -> str:
    """The Weaviate collection of one IndexFoundry collection and namespace."""
    readable = _SLUG.sub("_", collection.lower()).strip("_")[:40] or "x"
    if namespace:
        readable += "_" + (_SLUG.sub("_", namespace.lower()).strip("_")[:20] or "x")
    return f"If_{readable}_{sha256_text(collection + chr(0) + (namespace or ''))[:8]}"


def chunk_uuid(chunk_id: str) -> str:
    return str(uuid_lib.uuid5(_UUID_NAMESPACE, chunk_id))


def encode_key(key: str) -> str:
    """A metadata key as the tail of a Weaviate property name, reversibly."""
    out = []
    for ch in key:
        if ch in _PLAIN:
            out.append(ch)
        elif ch == ".":
            out.append("_d")
        elif ch == "_":
            out.append("_u")
        else:
            out.append(f"_x{ord(ch):06x}")
    return "".join(out)


def decode_key(encoded: str) -> str:
    out = []
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if ch != "_":
            out.append(ch)
            i += 1
            continue
        tag = encoded[i + 1]
        if tag == "x":
            out.append(chr(int(encoded[i + 2 : i + 8], 16)))
            i += 8
        else:
            out.append("." if tag == "d" else "_")
            i += 2
    return "".join(out)


def _tag(value: Any) -> str:
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "n"
    return "t"


def property_name(key: str, value: Any) -> str:
    return f"m{_tag(value)}_{encode_key(key)}"


def metadata_of(properties: dict[str, Any]) -> Metadata:
    out: Metadata = {}
    for name, value in properties.items():
        if len(name) > 3 and name[0] == "m" and name[1] in TYPES and name[2] == "_" and value is not None:
            out[decode_key(name[3:])] = value
    return out


def typed_properties(field: str, properties: dict[str, str]) -> dict[str, str]:
    """tag -> property name of ``field``'s properties among the collection's ``properties``."""
    tail = encode_key(field)
    return {tag: f"m{tag}_{tail}" for tag in TYPES if f"m{tag}_{tail}" in properties}
