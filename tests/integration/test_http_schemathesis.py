"""Property-based API test: schemathesis drives the real server from the served/openapi.json the serve
phase wrote, and finds no 5xx and no answer that violates the spec (bounded examples)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from indexfoundry.models.config import RateLimitConfig, ServeConfig
from indexfoundry.phases.serve import default_profile
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.http import HttpSettings, openapi_spec
from indexfoundry.surfaces.http.processes import http_settings
from tests.integration.http_support import LiveServer, make_run

# Property-based requests against a live server: a heavy case, outside the fast tier.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_and_spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    root = tmp_path_factory.mktemp("schemathesis")
    run_id = make_run(root, serve={"rate_limit": {"enabled": False}})
    layout = RunLayout(root / "runs" / run_id)
    # The server runs with exactly the settings the spec was written from.
    http = http_settings(root / "runs", run_id, port=0)
    server = LiveServer(http).start()
    try:
        assert json.loads(layout.openapi.read_text(encoding="utf-8")) == SPEC
        yield server, layout.openapi
    finally:
        server.stop()


def default_settings() -> HttpSettings:
    serve = ServeConfig(rate_limit=RateLimitConfig(enabled=False))
    filters = default_profile().allowed_filters
    return HttpSettings.from_config(serve, Path("runs"), "latest", port=0, allowed_filters=filters)


# The spec of a run whose serve config only switches rate limiting off; the fixture checks that it
# is byte for byte the served/openapi.json the serve phase wrote for that run.
SPEC = openapi_spec(default_settings())


def _without_cursor(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec minus the search body's ``cursor``: a cursor is an opaque token the server issued,
    so a generated one is rightly refused (400); cursors are tested in test_budgets.py."""
    copy = json.loads(json.dumps(spec))
    for name in ("SearchBody", "SearchAnyBody"):
        copy["components"]["schemas"][name]["properties"].pop("cursor", None)
    return copy


schema = schemathesis.openapi.from_dict(_without_cursor(SPEC))


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
def test_generated_requests_get_no_server_error_and_only_answers_the_spec_allows(case, server_and_spec):
    case.call_and_validate(base_url=server_and_spec[0].root)
