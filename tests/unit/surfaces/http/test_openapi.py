"""The OpenAPI spec: generated from the app, valid OpenAPI 3.1, deterministic, one error shape."""

from __future__ import annotations

from pathlib import Path

from openapi_spec_validator import validate

from indexfoundry.models.config import ALL_SERVE_ENDPOINTS, ApiInfo
from indexfoundry.models.retrieval import SearchRequest, SearchResponse
from indexfoundry.surfaces.http import HttpSettings, openapi_spec


def settings(tmp_path: Path, **overrides) -> HttpSettings:
    return HttpSettings(runs_dir=tmp_path, endpoints=list(ALL_SERVE_ENDPOINTS), **overrides)


def test_the_spec_is_valid_openapi_31_and_lists_every_endpoint(tmp_path: Path):
    spec = openapi_spec(settings(tmp_path))
    validate(spec)
    assert spec["openapi"] == "3.1.0"
    assert set(spec["paths"]) == {
        "/api/v1/search",
        "/api/v1/search/semantic",
        "/api/v1/search/hybrid",
        "/api/v1/search/keyword",
        "/api/v1/documents/{doc_id}",
        "/api/v1/chunks/{chunk_id}",
        "/api/v1/health",
        "/api/v1/stats",
        "/api/v1/freshness",
    }


def test_the_spec_is_identical_every_time_it_is_generated(tmp_path: Path):
    assert openapi_spec(settings(tmp_path)) == openapi_spec(settings(tmp_path / "other"))


def test_errors_are_documented_as_the_error_envelope_and_never_as_422(tmp_path: Path):
    spec = openapi_spec(settings(tmp_path))
    search = spec["paths"]["/api/v1/search/hybrid"]["post"]
    assert "422" not in search["responses"]
    for status in ("400", "413", "429", "503"):
        ref = search["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        assert ref == "#/components/schemas/ErrorEnvelope"
    assert "Retry-After" in search["responses"]["429"]["headers"]
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def test_the_search_body_is_the_shared_search_request_without_mode_with_the_server_limits(tmp_path: Path):
    spec = openapi_spec(settings(tmp_path, max_query_chars=300, max_top_k=20))
    body = spec["components"]["schemas"]["SearchBody"]
    assert set(body["properties"]) == set(SearchRequest.model_fields) - {"mode"}
    assert body["properties"]["query"]["maxLength"] == 300
    assert body["properties"]["top_k"]["maximum"] == 20
    assert body["additionalProperties"] is False
    answer = spec["components"]["schemas"]["SearchResponse"]
    assert set(answer["properties"]) == set(SearchResponse.model_fields)


def test_only_the_chosen_endpoints_under_the_chosen_base_path_are_described(tmp_path: Path):
    spec = openapi_spec(
        HttpSettings(runs_dir=tmp_path, endpoints=["search_semantic", "get_chunk"], api_info=ApiInfo(base_path="/x"))
    )
    assert set(spec["paths"]) == {"/x/search/semantic", "/x/chunks/{chunk_id}"}


def test_without_schemas_the_spec_has_no_components_and_stays_valid(tmp_path: Path):
    spec = openapi_spec(settings(tmp_path), include_schemas=False)
    validate(spec)
    assert "schemas" not in spec.get("components", {})


def test_keys_appear_in_the_spec_only_when_the_server_requires_them(tmp_path: Path):
    open_spec = openapi_spec(settings(tmp_path))
    search = open_spec["paths"]["/api/v1/search/semantic"]["post"]
    assert "security" not in search and "401" not in search["responses"]
    locked = openapi_spec(settings(tmp_path, require_auth=True))
    search = locked["paths"]["/api/v1/search/semantic"]["post"]
    assert {"APIKeyHeader", "HTTPBearer"} == {name for req in search["security"] for name in req}
    assert "401" in search["responses"]
    assert "security" not in locked["paths"]["/api/v1/health"]["get"]


def test_the_filters_of_the_search_body_are_exactly_the_profiles_allowed_filters(tmp_path: Path):
    from indexfoundry.models.retrieval import AllowedFilter

    allowed = [AllowedFilter(field="source.type", operators=["eq", "in"])]
    spec = openapi_spec(settings(tmp_path, allowed_filters=allowed))
    schemas = spec["components"]["schemas"]
    variants = schemas["SearchBody"]["properties"]["filters"]["items"]["anyOf"]
    names = [v["$ref"].rsplit("/", 1)[1] for v in variants]
    assert names == ["Filter_source_type_eq", "Filter_source_type_in"]
    in_value = schemas["Filter_source_type_in"]["properties"]["value"]
    # A list of one type: strings, numbers or booleans (mixed lists are refused by the service).
    assert [v["type"] for v in in_value["anyOf"]] == ["array", "array", "array"]
    assert [v["items"].get("type") for v in in_value["anyOf"]] == ["string", None, "boolean"]
    assert schemas["Filter_source_type_eq"]["properties"]["field"]["const"] == "source.type"
