"""Which version a query picks, by ``packaging``'s PEP 440 rules.

A version query is an exact version, ``latest``, ``18.x`` / ``18.*``, or a range (``>=18 <19``,
``>=18,<19``, ``~=18.2``), and picks the highest match; a version that is not PEP 440 only
matches exactly and sorts below the others.
"""

from __future__ import annotations

import re
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.ids import LATEST


def _version(value: str) -> Version | None:
    try:
        return Version(value)
    except InvalidVersion:
        return None


def version_order(value: str) -> tuple[int, Any]:
    """Sort key: PEP 440 versions by their order, above non-PEP 440 ones (by text)."""
    parsed = _version(value)
    return (1, parsed) if parsed is not None else (0, value)


def _specifier(query: str) -> SpecifierSet | None:
    text = query.strip()
    wildcard = re.fullmatch(r"(\d+(?:\.\d+)*)\.(?:x|\*)", text, re.IGNORECASE)
    if wildcard:
        text = f"=={wildcard.group(1)}.*"
    elif not re.match(r"^(==|!=|<=|>=|<|>|~=)", text):
        return None
    text = re.sub(r"\s*,\s*|\s+(?=(==|!=|<=|>=|<|>|~=))", ",", text)
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ConfigInvalid(
            f"version '{query}' is not a version or a range",
            suggestion="Use an exact version, 'latest', '18.x' or a range like '>=18 <19'",
        ) from None


def pick_version(versions: list[str], query: str | None) -> str | None:
    """The highest of ``versions`` matching ``query`` (None or 'latest': the highest)."""
    ordered = sorted(versions, key=version_order, reverse=True)
    if query is None or query.strip().lower() == LATEST:
        return ordered[0] if ordered else None
    wanted = query.strip()
    exact = _version(wanted)
    for candidate in ordered:
        parsed = _version(candidate)
        if candidate == wanted or (exact is not None and parsed is not None and parsed == exact):
            return candidate
    specifier = _specifier(wanted)
    if specifier is None:
        return None
    for candidate in ordered:
        parsed = _version(candidate)
        if parsed is not None and specifier.contains(parsed, prereleases=True):
            return candidate
    return None
