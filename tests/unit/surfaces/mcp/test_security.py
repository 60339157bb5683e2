"""Run ids an agent passes to MCP tools are lowercase UUIDs; bearer tokens compare exactly."""

from __future__ import annotations

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.mcp.security import check_run_id, tokens_equal

RUN = "01900000-0000-7000-8000-000000000001"


def code_of(call) -> str:
    with pytest.raises(IndexFoundryError) as info:
        call()
    return info.value.code


@pytest.mark.parametrize("value", ["latest", "../" + RUN, "0190ABCD-0000-7000-8000-00000000000A", "", 42, None])
def test_anything_but_a_lowercase_uuid_is_not_a_run_id(value):
    assert code_of(lambda: check_run_id(value)) == "RUN_NOT_FOUND"


def test_a_uuid_is_a_run_id():
    assert check_run_id(RUN) == RUN


def test_bearer_tokens_compare_exactly():
    assert tokens_equal("abc", "abc")
    assert not tokens_equal("abc", "abd")
    assert not tokens_equal("", "abc")
