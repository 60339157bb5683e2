"""Figures the docs print that a test measures, kept equal to what the test measured.

A figure is written in the docs between two HTML comments (invisible once rendered):
``<!-- figure:mcp.docs_listing -->5,876<!-- /figure -->``. The test that measures it calls
:func:`documented` with its name and value: the test fails when a page prints another value
(``pytest --update-figures`` rewrites every place the figure is printed), and when no page
prints it at all, so a figure cannot go stale or be dropped unnoticed.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- figure:{re.escape(name)} -->)(.*?)(<!-- /figure -->)")


def formatted(value: int | float) -> str:
    """How the docs write a figure: thousands separated by commas."""
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def documented(name: str, value: int | float, *, update: bool) -> None:
    """Check (or, with ``update``, rewrite) every place the docs print figure ``name``."""
    text = formatted(value)
    places: list[tuple[Path, str]] = []
    for page in PAGES:
        content = page.read_text(encoding="utf-8")
        for match in _pattern(name).finditer(content):
            places.append((page, match.group(2)))
        if update and _pattern(name).search(content):
            page.write_text(_pattern(name).sub(lambda m: f"{m.group(1)}{text}{m.group(3)}", content), encoding="utf-8")
    assert places, f"no page prints the figure {name!r} (<!-- figure:{name} -->…<!-- /figure -->)"
    stale = [f"{page.relative_to(REPO)}: {printed}" for page, printed in places if printed != text]
    assert update or not stale, f"figure {name} measures {text}, the docs print {stale}: rerun with --update-figures"
