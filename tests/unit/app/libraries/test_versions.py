"""Library versions: version queries (exact, latest, wildcards, ranges) pick the highest match."""

from __future__ import annotations

import pytest

from indexfoundry.app.libraries import pick_version
from indexfoundry.errors import IndexFoundryError

VERSIONS = ["17.0.2", "18.2.0", "18.3.1", "19.0.0rc1", "nightly"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (None, "19.0.0rc1"),
        ("latest", "19.0.0rc1"),
        ("18.2.0", "18.2.0"),
        ("18.2", "18.2.0"),  # PEP 440: 18.2 == 18.2.0
        ("18.x", "18.3.1"),
        ("18.*", "18.3.1"),
        ("17.x", "17.0.2"),
        (">=18 <19", "18.3.1"),
        (">=18,<18.3", "18.2.0"),
        ("~=18.2", "18.3.1"),
        ("<18", "17.0.2"),
        ("nightly", "nightly"),
        ("20.x", None),
        ("16.0", None),
    ],
)
def test_a_version_query_picks_the_highest_matching_version(query: str | None, expected: str | None):
    assert pick_version(VERSIONS, query) == expected


def test_a_query_that_is_neither_a_version_nor_a_range_is_config_invalid():
    with pytest.raises(IndexFoundryError) as caught:
        pick_version(VERSIONS, ">=banana")
    assert caught.value.code == "CONFIG_INVALID"
