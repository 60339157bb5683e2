"""The HTTP surface's side of the port the use cases reach it through (``app.serving.HttpSurface``)."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from indexfoundry.app.serving import SURFACES_GROUP, http_surface
from indexfoundry.models.config import ServeConfig
from indexfoundry.surfaces.http import HttpSettings, openapi_spec
from indexfoundry.surfaces.http.provider import HttpSurfaceProvider


def test_the_http_surface_the_use_cases_load_is_the_one_the_package_declares_as_its_entry_point():
    (declared,) = entry_points(group=SURFACES_GROUP, name="http")
    assert declared.value == "indexfoundry.surfaces.http.provider:HTTP_SURFACE"
    assert http_surface() is declared.load()
    assert isinstance(http_surface(), HttpSurfaceProvider)


def test_the_provided_spec_is_the_spec_of_the_app_a_server_of_those_settings_runs(tmp_path: Path):
    serve = ServeConfig()
    spec = http_surface().openapi_spec(serve, tmp_path, "latest", {"require_auth": True}, False)
    settings = HttpSettings.from_config(serve, tmp_path, "latest", require_auth=True)
    assert spec == openapi_spec(settings, include_schemas=False)
    assert "securitySchemes" in spec["components"]
