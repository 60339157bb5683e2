"""Library flags: name, version and source, scoped names included; anything else is CONFIG_INVALID."""

from __future__ import annotations

import pytest

from indexfoundry.app.libraries import parse_library_flag
from indexfoundry.errors import IndexFoundryError


def test_library_flags_split_name_version_and_target_even_for_scoped_names():
    entry = parse_library_flag("@types/node@20.1=./node.yaml")
    assert (entry.name, entry.version, entry.source) == ("@types/node", "20.1", "./node.yaml")
    for bad in ("react=./x.yaml", "react@18.3", "@18=./x", "react@=./x", "re act@1=./x"):
        with pytest.raises(IndexFoundryError) as caught:
            parse_library_flag(bad)
        assert caught.value.code == "CONFIG_INVALID"
