"""The OpenAPI document kept in the runs folder's work cache: the same document, built once per code
and settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from indexfoundry.app.openapi_cache import cache_kind, code_digest, spec_key, stored_spec
from indexfoundry.app.serving import http_surface
from indexfoundry.models.config import ServeConfig
from indexfoundry.storage.workcache import WorkCache


def generated(runs: Path, serve: ServeConfig, overrides: dict, include_schemas: bool = True) -> dict:
    return http_surface().openapi_spec(serve, runs, "latest", overrides, include_schemas)


def test_a_stored_spec_is_the_spec_the_app_generates_and_is_not_built_again(tmp_path: Path):
    serve = ServeConfig()
    key = spec_key(http_surface(), [serve, {}, True])
    built = stored_spec(tmp_path, key, lambda: generated(tmp_path, serve, {}))
    builds: list[int] = []

    def build() -> dict:
        builds.append(1)
        return {}

    again = stored_spec(tmp_path, key, build)
    assert builds == []
    assert again == built == generated(tmp_path, serve, {})


def test_other_settings_schemas_or_surfaces_have_other_keys(tmp_path: Path):
    surface = http_surface()
    plain = spec_key(surface, [ServeConfig(), {}, True])
    assert spec_key(surface, [ServeConfig(), {}, True]) == plain
    assert spec_key(surface, [ServeConfig(require_auth=True), {}, True]) != plain
    assert spec_key(surface, [ServeConfig(), {"require_auth": True}, True]) != plain
    assert spec_key(surface, [ServeConfig(), {}, False]) != plain
    assert spec_key(object(), [ServeConfig(), {}, True]) != plain


def test_each_key_keeps_its_own_document(tmp_path: Path):
    surface = http_surface()
    keyed = spec_key(surface, [ServeConfig(), {"require_auth": True}, True])
    plain = spec_key(surface, [ServeConfig(), {}, True])
    secured = stored_spec(tmp_path, keyed, lambda: generated(tmp_path, ServeConfig(), {"require_auth": True}))
    open_spec = stored_spec(tmp_path, plain, lambda: generated(tmp_path, ServeConfig(), {}))
    assert "securitySchemes" in secured["components"] and "securitySchemes" not in open_spec["components"]
    with WorkCache.for_runs(tmp_path) as cache:
        assert cache.get_many(cache_kind(), [keyed, plain]) == {keyed: secured, plain: open_spec}


def test_the_code_digest_is_the_same_in_a_fresh_interpreter():
    digest = code_digest()
    assert len(digest) == 64 and digest == code_digest()
    fresh = subprocess.run(
        [sys.executable, "-c", "from indexfoundry.app.openapi_cache import code_digest; print(code_digest())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == digest


def test_an_unusable_cache_only_costs_the_build(tmp_path: Path):
    (tmp_path / ".cache").write_text("not a folder", encoding="utf-8")
    spec = stored_spec(tmp_path, "k", lambda: generated(tmp_path, ServeConfig(), {}))
    assert spec == generated(tmp_path, ServeConfig(), {})


def test_a_process_that_finds_the_spec_stored_does_not_import_fastapi(tmp_path: Path):
    key = spec_key(http_surface(), [ServeConfig(), {}, True])
    stored_spec(tmp_path, key, lambda: generated(tmp_path, ServeConfig(), {}))
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from indexfoundry.app.openapi_cache import spec_key, stored_spec\n"
        "from indexfoundry.app.serving import http_surface\nfrom indexfoundry.models.config import ServeConfig\n"
        "surface = http_surface()\nkey = spec_key(surface, [ServeConfig(), {}, True])\n"
        f"runs = Path({str(tmp_path)!r})\n"
        "spec = stored_spec(runs, key, lambda: surface.openapi_spec(ServeConfig(), runs, 'latest', {}, True))\n"
        "print(spec['openapi'], 'fastapi' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["3.1.0", "False"]
