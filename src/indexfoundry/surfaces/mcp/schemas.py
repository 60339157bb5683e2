"""Tool input schemas as tight as they can be without losing meaning: an agent's context is precious.

Pydantic's JSON Schema is made for documentation: every property has a ``title`` repeating its
name, optional fields are ``anyOf: [X, {type: null}]`` with ``default: null``, and every nested
model is a ``$defs`` entry reached by ``$ref`` even when it is used once. ``compact_schema``
keeps what a model needs to call the tool correctly (types, enums, bounds, descriptions,
defaults that are not null, ``required``, ``additionalProperties: false``) and drops the rest:

- ``title`` everywhere (the key already names the property);
- ``default: null`` (not being in ``required`` says the same);
- ``anyOf: [{type: T, ...}, {type: null}]`` becomes ``{type: [T, null], ...}``;
- a ``$defs`` entry used once is inlined where it is used; one used several times stays, once.

The server validates every call against the full strict model anyway (unknown keys are refused
with the nearest valid key), so nothing the compact schema leaves out can slip through.
"""

from __future__ import annotations

import copy
import json
from typing import Any

# Keys whose value is a mapping of names to schemas (the names must be kept as they are).
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")
# Keys whose value is one schema, or a list of schemas.
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else")
_SCHEMA_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_REF_PREFIX = "#/$defs/"


def _refs(node: Any, counts: dict[str, int]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            counts[ref[len(_REF_PREFIX) :]] = counts.get(ref[len(_REF_PREFIX) :], 0) + 1
        for value in node.values():
            _refs(value, counts)
    elif isinstance(node, list):
        for value in node:
            _refs(value, counts)


def _nullable(options: list[Any]) -> dict[str, Any] | None:
    """``[{type: T, ...}, {type: null}]`` → ``{type: [T, null], ...}`` when T is one plain type."""
    if len(options) != 2 or {"type": "null"} not in options:
        return None
    other = options[0] if options[1] == {"type": "null"} else options[1]
    if not isinstance(other, dict) or not isinstance(other.get("type"), str) or "$ref" in other:
        return None
    return {**other, "type": [other["type"], "null"]}


def _compact(node: Any, defs: dict[str, Any], inline: set[str]) -> Any:
    if isinstance(node, list):
        return [_compact(v, defs, inline) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX) and ref[len(_REF_PREFIX) :] in inline:
        target = _compact(copy.deepcopy(defs[ref[len(_REF_PREFIX) :]]), defs, inline)
        extra = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **_compact(extra, defs, inline)}
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _compact(schema, defs, inline) for name, schema in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _compact(value, defs, inline)
        elif key in _SCHEMA_LIST and isinstance(value, list):
            out[key] = [_compact(v, defs, inline) for v in value]
        else:
            out[key] = value
    options = out.get("anyOf")
    if isinstance(options, list) and (merged := _nullable(options)) is not None:
        rest = {k: v for k, v in out.items() if k != "anyOf"}
        out = {**merged, **rest}
    return out


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A smaller, equivalent-for-callers JSON Schema (see the module docstring)."""
    schema = copy.deepcopy(schema)
    defs: dict[str, Any] = schema.pop("$defs", {})
    counts: dict[str, int] = {}
    _refs(schema, counts)
    _refs(defs, counts)
    recursive = set()
    for name, definition in defs.items():
        inner: dict[str, int] = {}
        _refs(definition, inner)
        if name in inner:
            recursive.add(name)
    inline = {name for name in defs if counts.get(name, 0) <= 1 and name not in recursive}
    out: dict[str, Any] = _compact(schema, defs, inline)
    kept = {name: _compact(defs[name], defs, inline) for name in sorted(defs) if name not in inline}
    if kept:
        out["$defs"] = kept
    out.setdefault("type", "object")
    return out


def listing_size(tools: list[dict[str, Any]]) -> int:
    """Characters of a ``tools/list`` answer's tools as JSON: what a client puts in the model's context."""
    return sum(len(json.dumps(tool, ensure_ascii=False)) for tool in tools)


# A tool whose compact input schema is larger than this is listed with a summary (its sections'
# keys) instead; the whole schema is one resources/read away (``SCHEMA_URI_PREFIX`` + tool name).
SCHEMA_BUDGET = 2500
SCHEMA_URI_PREFIX = "indexfoundry://schemas/"


def _variant(schema: dict[str, Any]) -> str:
    """``{type: folder, path}`` for one member of a union keyed by ``type``."""
    props = schema.get("properties", {})
    kind = props.get("type", {})
    tag = kind.get("const") or (kind.get("enum") or [None])[0]
    required = [k for k in schema.get("required", []) if k != "type"]
    inside = ", ".join([f"type: {tag}", *required]) if tag else ", ".join(required)
    return "{" + inside + "}"


def _key(name: str, schema: dict[str, Any]) -> str:
    """One key of a summarised section: its name, and the shapes of a list of tagged objects."""
    items = schema.get("items", {})
    options = items.get("anyOf") or items.get("oneOf") if isinstance(items, dict) else None
    if isinstance(options, list) and all(isinstance(o, dict) and "properties" in o for o in options):
        return f"{name} [{' | '.join(_variant(o) for o in options)}]"
    return name


def summarize_schema(schema: dict[str, Any], tool_name: str) -> dict[str, Any]:
    """``schema`` with every object-valued top-level property reduced to its description and key
    names (``required`` kept); the full schema is the resource the description names."""
    out = {k: v for k, v in schema.items() if k not in ("properties", "$defs")}
    props: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if isinstance(prop, dict) and "properties" in prop:
            keys = ", ".join(_key(k, v) for k, v in prop["properties"].items())
            required = prop.get("required", [])
            text = (prop.get("description", "") + " Keys: " + keys).strip()
            summary: dict[str, Any] = {"type": "object", "description": text}
            if required:
                summary["required"] = required
            props[name] = summary
        else:
            props[name] = prop
    out["properties"] = props
    note = f"Objects are summarised; the full input schema is the resource {SCHEMA_URI_PREFIX}{tool_name}."
    out["description"] = (str(schema.get("description", "")) + " " + note).strip()
    return out


def listed_schema(schema: dict[str, Any], tool_name: str) -> dict[str, Any]:
    """The input schema as ``tools/list`` shows it: compact, and summarised when over budget."""
    compact = compact_schema(schema)
    if len(json.dumps(compact)) <= SCHEMA_BUDGET:
        return compact
    return summarize_schema(compact, tool_name)
