"""Metadata filters: validation against the retrieval profile, one evaluation rule, store push-down.

Every mode evaluates a filter with the same rule (``matches``), so semantic, keyword and hybrid
results agree on what a filter keeps. For speed, the filters a vector store understands are
also pushed into its query; its hits are then checked with ``matches`` too, so a store whose
edge cases differ (a missing field under ``neq``...) can never let a non-matching chunk through.

Rules: a chunk without the field never matches (not even ``neq``); ``gt``/``gte``/``lt``/``lte``
compare numbers; ``in`` takes a list; ``contains`` is a substring test on text fields and a
membership test on list fields (``metadata.tags``).
"""

from __future__ import annotations

from typing import Any

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.records import DocumentChunk, chunk_field
from indexfoundry.models.retrieval import RetrievalProfile, SearchFilter

# Operators a Chroma-style ``where`` clause expresses (``contains`` is evaluated here instead).
STORE_OPS: dict[str, str] = {
    "eq": "$eq",
    "neq": "$ne",
    "gt": "$gt",
    "gte": "$gte",
    "lt": "$lt",
    "lte": "$lte",
    "in": "$in",
}
_RANGE_OPS = frozenset({"gt", "gte", "lt", "lte"})
_CHUNK_FIELDS = frozenset(DocumentChunk.model_fields)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return "number" if _is_number(value) else "str"


def known_field(field: str) -> bool:
    """True if ``field`` is a dotted path into a chunk record (``source.uri``, ``metadata.custom.x``)."""
    parts = field.split(".")
    return bool(field) and all(parts) and parts[0] in _CHUNK_FIELDS


def check_filters(filters: list[SearchFilter], profile: RetrievalProfile) -> None:
    """Refuse (``CONFIG_INVALID``) a filter on a field or with an operator the profile does not allow."""
    allowed = {f.field: set(f.operators) for f in profile.allowed_filters}
    for flt in filters:
        if flt.field not in allowed:
            raise ConfigInvalid(
                f"filtering on '{flt.field}' is not allowed by this run's retrieval profile",
                suggestion=f"Allowed fields: {', '.join(sorted(allowed)) or 'none'}",
                details={"field": flt.field, "allowed": sorted(allowed)},
            )
        if flt.op not in allowed[flt.field]:
            raise ConfigInvalid(
                f"operator '{flt.op}' is not allowed on '{flt.field}'",
                suggestion=f"Allowed operators on {flt.field}: {', '.join(sorted(allowed[flt.field]))}",
                details={"field": flt.field, "op": flt.op},
            )
        check_value(flt)


def check_value(flt: SearchFilter) -> None:
    """The value must suit the operator: a list for ``in``, a number for range operators."""
    if flt.op == "in":
        if not isinstance(flt.value, list) or not flt.value or not all(_is_scalar(v) for v in flt.value):
            raise ConfigInvalid(
                f"filter '{flt.field} in' needs a non-empty list of values",
                suggestion='Pass a JSON list, e.g. --filter source.type in \'["markdown", "pdf"]\'',
            )
        if len({_value_kind(v) for v in flt.value}) > 1:
            # Vector stores compare one type per list (Chroma refuses mixed lists outright).
            raise ConfigInvalid(
                f"filter '{flt.field} in' mixes value types: {flt.value!r}",
                suggestion="Use values of one type: all strings, all numbers or all booleans",
            )
    elif flt.op in _RANGE_OPS:
        if not _is_number(flt.value):
            raise ConfigInvalid(
                f"filter '{flt.field} {flt.op}' needs a number, not {flt.value!r}",
                suggestion="Range operators compare numbers, e.g. --filter position.page gte 2",
            )
    elif not _is_scalar(flt.value):
        raise ConfigInvalid(
            f"filter '{flt.field} {flt.op}' needs a single value (string, number or boolean)",
            suggestion="Use 'in' to match any of several values",
        )


def _match_one(value: Any, flt: SearchFilter) -> bool:
    if value is None:
        return False
    want = flt.value
    if isinstance(value, list):
        if flt.op in ("eq", "contains"):
            return want in value
        if flt.op == "neq":
            return want not in value
        if flt.op == "in":
            return any(v in value for v in want)
        return False
    if flt.op == "eq":
        return bool(value == want)
    if flt.op == "neq":
        return bool(value != want)
    if flt.op == "in":
        return value in want
    if flt.op == "contains":
        return str(want) in str(value)
    if not _is_number(value):
        return False
    if flt.op == "gt":
        return bool(value > want)
    if flt.op == "gte":
        return bool(value >= want)
    if flt.op == "lt":
        return bool(value < want)
    return bool(value <= want)


def matches(data: dict[str, Any], filters: list[SearchFilter]) -> bool:
    """True if a chunk (its JSON form) passes every filter (filters are ANDed)."""
    return all(_match_one(chunk_field(data, f.field), f) for f in filters)


def _store_ops(contains: bool) -> dict[str, str]:
    return {**STORE_OPS, "contains": "$contains"} if contains else STORE_OPS


def store_where(filters: list[SearchFilter], store_fields: set[str], contains: bool = False) -> dict[str, Any] | None:
    """The part of ``filters`` a vector store can apply itself, as a Chroma-style ``where``
    (``contains`` too when the store translates ``$contains``)."""
    ops = _store_ops(contains)
    clauses = [{f.field: {ops[f.op]: f.value}} for f in filters if f.op in ops and f.field in store_fields]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def needs_post_filter(filters: list[SearchFilter], store_fields: set[str], contains: bool = False) -> bool:
    """True if some filter cannot be pushed into the store (so more candidates must be fetched)."""
    ops = _store_ops(contains)
    return any(f.op not in ops or f.field not in store_fields for f in filters)
