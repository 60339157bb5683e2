"""Pydantic validation errors as one CONFIG_INVALID a person can act on.

Every error is reported (not "and 3 more"), each at the key path as the user wrote it
(``connect.sources[0]``, never pydantic's ``connect.sources.0.folder``), and an unknown key or
value gets the nearest valid one: "connect.sources[0].pth: unknown key (did you mean 'path'?)". A misspelt key
and the required key it was meant to be are reported once, as the misspelling.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from indexfoundry.errors import ConfigInvalid

_USERINFO = re.compile(r"(//)[^/@\s]*@")


def closest(word: str, options: Sequence[str]) -> str | None:
    """The option nearest to ``word`` (difflib), or None when nothing is close enough."""
    found = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, options: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest option, or an empty string."""
    near = closest(word, options)
    return f" (did you mean '{near}'?)" if near else ""


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` → X (a union of several models stays a union)."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return annotation


def _union_member(annotation: Any, tag: str) -> type[BaseModel] | None:
    """The member of a discriminated union of models whose ``type`` literal is ``tag``."""
    if get_origin(annotation) not in (Union, types.UnionType):
        return None
    for member in get_args(annotation):
        member = _unwrap(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            field = member.model_fields.get("type")
            if field is not None and tag in get_args(_unwrap(field.annotation)):
                return member
    return None


class _Located:
    """A pydantic ``loc`` resolved against the model: display path and the model it ends in."""

    def __init__(self, loc: tuple[Any, ...], model: type[BaseModel] | None) -> None:
        self.parts: list[str] = []
        self.parent: type[BaseModel] | None = None  # model holding the last key
        self.annotation: Any = model
        current: Any = model
        for i, part in enumerate(loc):
            last = i == len(loc) - 1
            current = _unwrap(current) if current is not None else None
            if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
                if last:
                    self.parent = current
                field = current.model_fields.get(part)
                current = field.annotation if field is not None else None
                self._key(part)
                continue
            if isinstance(part, str) and (member := _union_member(current, part)) is not None:
                current = member  # pydantic's discriminator tag: not a key the user wrote
                if last:
                    self.parent = member
                continue
            origin = get_origin(current)
            if isinstance(part, int):
                self.parts.append(f"[{part}]")
                current = get_args(current)[0] if origin in (list, tuple, set) and get_args(current) else None
                continue
            current = get_args(current)[1] if origin is dict and get_args(current) else None
            self._key(str(part))
        self.annotation = current

    def _key(self, part: str) -> None:
        self.parts.append(part if not self.parts else f".{part}")

    @property
    def path(self) -> str:
        return "".join(self.parts) or "(root)"

    @property
    def parent_path(self) -> str:
        joined = "".join(self.parts[:-1])
        return joined or "(top level)"


def _literal_options(error: Any, annotation: Any) -> list[str]:
    values = get_args(_unwrap(annotation)) if get_origin(_unwrap(annotation)) is Literal else ()
    if values:
        return [str(v) for v in values]
    expected = str((error.get("ctx") or {}).get("expected", ""))
    return re.findall(r"'([^']*)'", expected)


def describe_errors(exc: ValidationError, model: type[BaseModel] | None = None) -> list[dict[str, Any]]:
    """One entry per problem: ``path`` (as written), ``message``, and ``did_you_mean`` when known."""
    errors = exc.errors()
    located = [_Located(tuple(e.get("loc", ())), model) for e in errors]
    out: list[dict[str, Any]] = []
    explained: set[tuple[str, str]] = set()
    for error, loc in zip(errors, located, strict=True):
        kind = error.get("type")
        entry: dict[str, Any] = {"path": loc.path}
        if kind == "extra_forbidden":
            key = str(error["loc"][-1])
            valid = list(loc.parent.model_fields) if loc.parent is not None else []
            near = closest(key, valid)
            entry = {"path": loc.path, "message": "unknown key" + did_you_mean(key, valid)}
            if near is not None:
                entry["did_you_mean"] = near
                explained.add((loc.parent_path, near))
        elif kind == "literal_error":
            value = str(error.get("input"))
            options = _literal_options(error, loc.annotation)
            entry["message"] = f"'{value}' is not one of {', '.join(options)}" + did_you_mean(value, options)
            near = closest(value, options)
            if near is not None:
                entry["did_you_mean"] = near
        elif kind == "union_tag_invalid":
            tag = str((error.get("ctx") or {}).get("tag", error.get("input")))
            options = re.findall(r"'([^']*)'", str((error.get("ctx") or {}).get("expected_tags", "")))
            entry["message"] = f"unknown type '{tag}' (one of {', '.join(options)})" + did_you_mean(tag, options)
        elif kind == "missing":
            entry = {"path": loc.parent_path, "message": f"missing required key '{error['loc'][-1]}'"}
            entry["_missing"] = (loc.parent_path, str(error["loc"][-1]))
        else:
            entry["message"] = str(error.get("msg", "invalid"))
            if "input" in error and not isinstance(error["input"], dict | list):
                # A URL's user and password are never echoed back.
                entry["message"] += " (got " + _USERINFO.sub(r"\1***@", repr(error["input"])) + ")"
        out.append(entry)
    # A required key reported missing because it was misspelt is explained by the misspelling.
    return [e for e in out if e.pop("_missing", None) not in explained]


def validation_error(exc: ValidationError, what: str, model: type[BaseModel] | None = None) -> ConfigInvalid:
    """CONFIG_INVALID listing every problem of ``exc`` in one line (``what``: the file or request)."""
    problems = describe_errors(exc, model)
    listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
    message = f"{what}: {listed}" if len(problems) == 1 else f"{what}: {len(problems)} problems: {listed}"
    # Only a config file is described by 'indexfoundry config schema'; requests name their own fields.
    schema = "; 'indexfoundry config schema' lists every valid key and value" if model is not None else ""
    if any("did_you_mean" in p for p in problems):
        suggestion = "Use the suggested names" + schema
    elif any(p["message"].startswith("unknown key") for p in problems):
        suggestion = "Remove or rename the unknown keys" + schema
    else:
        suggestion = "Fix the values named" + schema
    return ConfigInvalid(message, suggestion=suggestion, details={"errors": problems})
