"""Credentials in request headers come from the environment: a config that writes one is refused."""

from __future__ import annotations

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import parse_pipeline_config

SOURCES = [{"type": "url", "url": "https://example.org/"}]


@pytest.mark.parametrize("name", ["Authorization", "Cookie", "X-Api-Key", "X-Auth-Token", "Proxy-Authorization"])
def test_a_secret_looking_header_written_in_the_config_is_refused(name: str):
    with pytest.raises(IndexFoundryError) as info:
        parse_pipeline_config({"connect": {"sources": SOURCES, "headers": {name: "Bearer s3cret"}}})
    assert info.value.code == "CONFIG_INVALID"
