"""Filters as Weaviate's own (``$eq $ne $gt $gte $lt $lte $in $nin $and $or``).

A missing field never matches, so ``$ne``/``$nin`` add "has a value": ``like('*')`` on text, a
range every value meets on numbers. What cannot be sent exactly (ranges on text, ``$contains``,
boolean values: weaviate-client 4.15 under protobuf 7 cannot encode a boolean filter value) is
left out of the pushed filter, which only loosens it: the store re-checks every hit with the
shared rule (``stores.matches``).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from indexfoundry.backends.stores import Compare, Filter, Logic
from indexfoundry.backends.stores.weaviate_schema import typed_properties

# A uuid no chunk has (chunk uuids are uuid5): a filter that matches nothing.
NO_OBJECT = "00000000-0000-0000-0000-000000000000"


def to_filter(flt: Filter | None, properties: dict[str, str]) -> Any:
    """The Weaviate filter for ``flt`` over a collection with ``properties`` (name -> data type), or None
    when nothing is pushed (the hits are re-checked)."""
    from weaviate.classes.query import Filter as W

    if flt is None:
        return None
    if isinstance(flt, Logic):
        parts = [to_filter(p, properties) for p in flt.parts]
        if flt.op == "$and":
            kept = [p for p in parts if p is not None]
            return None if not kept else kept[0] if len(kept) == 1 else W.all_of(kept)
        if any(p is None for p in parts):
            return None
        return parts[0] if len(parts) == 1 else W.any_of(parts)
    assert isinstance(flt, Compare)
    never = W.by_id().equal(NO_OBJECT)
    typed = typed_properties(flt.field, properties)
    op, value = flt.op, flt.value
    if op == "$contains":
        return None
    if op in ("$eq", "$in"):
        options = []
        for v in value if op == "$in" else [value]:
            for tag, name in typed.items():
                if tag == "b" and isinstance(v, bool):
                    return None  # the client cannot send a boolean filter value: re-checked
                cond = _equal(name, tag, v)
                if cond is not None:
                    options.append(cond)
        return _any(options) or never
    if op in ("$ne", "$nin"):
        excluded = value if op == "$nin" else [value]
        options = []
        for tag, name in typed.items():
            if tag == "b":
                return None
            parts = [_present(name, tag)]
            parts += [cond for v in excluded if (cond := _equal(name, tag, v, negate=True)) is not None]
            options.append(parts[0] if len(parts) == 1 else W.all_of(parts))
        return _any(options) or never
    # Ranges: numbers against int and number properties; never a boolean; text is re-checked.
    if isinstance(value, bool):
        return never
    if isinstance(value, str):
        return None
    options = [cond for tag, name in typed.items() if (cond := _range(name, tag, op, value)) is not None]
    return _any(options) or never


def filter_fields(flt: Filter | None) -> set[str]:
    if flt is None:
        return set()
    if isinstance(flt, Compare):
        return {flt.field}
    return {f for part in flt.parts for f in filter_fields(part)}


def _any(options: list[Any]) -> Any:
    from weaviate.classes.query import Filter as W

    if not options:
        return None
    return options[0] if len(options) == 1 else W.any_of(options)


def _present(name: str, tag: str) -> Any:
    """``name`` has a value. Not ``is_none(False)``: weaviate-client 4.15 under protobuf 7 cannot
    send a boolean filter value (it also fills ``value_int``), so a condition every value meets."""
    from weaviate.classes.query import Filter as W

    prop = W.by_property(name)
    if tag == "t":
        return prop.like("*")
    if tag == "i":
        return prop.greater_or_equal(-(2**63))
    return prop.greater_or_equal(-sys.float_info.max)


def _equal(name: str, tag: str, value: Any, negate: bool = False) -> Any:
    """``name == value`` (or ``!=``) when a property of type ``tag`` (not boolean: see ``_present``)
    can hold ``value``, else None."""
    from weaviate.classes.query import Filter as W

    prop = W.by_property(name)
    if tag == "b":
        return None
    if tag == "t":
        if not isinstance(value, str):
            return None
        return prop.not_equal(value) if negate else prop.equal(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if tag == "i":
        if isinstance(value, float) and not value.is_integer():
            return None  # an int never equals it (and always differs from it)
        operand: int | float = int(value)
    else:
        operand = float(value)
    return prop.not_equal(operand) if negate else prop.equal(operand)


def _range(name: str, tag: str, op: str, value: int | float) -> Any:
    from weaviate.classes.query import Filter as W

    if tag not in ("i", "n"):
        return None
    prop = W.by_property(name)
    operand: int | float
    if tag == "n":
        operand = float(value)
    elif op in ("$gt", "$lte"):
        operand = math.floor(value)
    else:
        operand = math.ceil(value)
    return {
        "$gt": prop.greater_than,
        "$gte": prop.greater_or_equal,
        "$lt": prop.less_than,
        "$lte": prop.less_or_equal,
    }[op](operand)
