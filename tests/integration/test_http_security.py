"""Authentication, namespaces, CORS and rate limiting on a real server."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from indexfoundry.models.config import RateLimitConfig
from tests.integration.http_support import LiveServer, live_server, make_run

KEY = "test-key-0123456789abcdef"
DOCS_KEY = "docs-only-key-0123456789"
OTHER_KEY = "other-ns-key-0123456789ab"
SEARCH = {"query": "install", "top_k": 2}


@pytest.fixture(scope="module")
def auth_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    root = tmp_path_factory.mktemp("auth")
    run_id = make_run(
        root,
        serve={"require_auth": True, "allowed_namespaces": ["docs"]},
        index={"embedding_model": "hash", "vector_db": {"namespace": "docs"}},
    )
    key_file = root / "keys.json"
    key_file.write_text(
        json.dumps(
            {
                "keys": [
                    {"name": "docs", "sha256": hashlib.sha256(DOCS_KEY.encode()).hexdigest(), "namespaces": ["docs"]},
                    {"name": "other", "key": OTHER_KEY, "namespaces": ["other"]},
                ]
            }
        ),
        encoding="utf-8",
    )
    return root / "runs", run_id, key_file


@pytest.fixture
def auth_server(auth_runs, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    runs_dir, run_id, key_file = auth_runs
    monkeypatch.setenv("IF_TEST_KEYS", KEY)
    with live_server(runs_dir, run_id, api_keys_env="IF_TEST_KEYS", api_key_file=key_file) as server:
        yield server


def code_of(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def test_missing_unknown_and_malformed_keys_get_the_same_401(auth_server: LiveServer):
    answers = []
    with auth_server.client() as client:
        for headers in ({}, {"X-API-Key": "not-a-key-0123456789"}, {"Authorization": "Basic abc"}):
            response = client.post("/search/semantic", json=SEARCH, headers=headers)
            assert response.status_code == 401
            assert code_of(response) == "AUTH_REQUIRED"
            answers.append(response.json())
    assert answers[0] == answers[1] == answers[2]


def test_health_stays_open_and_says_a_key_is_needed(auth_server: LiveServer):
    with auth_server.client() as client:
        health = client.get("/health")
    assert health.status_code == 200
    assert health.json()["auth_required"] is True


@pytest.mark.parametrize(
    "headers", [{"X-API-Key": KEY}, {"Authorization": f"Bearer {KEY}"}, {"Authorization": f"Bearer {DOCS_KEY}"}]
)
def test_a_valid_key_in_either_header_can_search_and_read(auth_server: LiveServer, headers):
    with auth_server.client(headers=headers) as client:
        results = client.post("/search/semantic", json=SEARCH).json()["results"]
        assert results
        assert client.get(f"/chunks/{results[0]['chunk_id']}").status_code == 200
        assert client.get("/stats").status_code == 200


def test_a_key_limited_to_other_namespaces_cannot_search_this_one(auth_server: LiveServer):
    with auth_server.client(headers={"X-API-Key": OTHER_KEY}) as client:
        response = client.post("/search/semantic", json=SEARCH)
    assert response.status_code == 403
    assert code_of(response) == "AUTH_REQUIRED"


def test_the_server_refuses_to_start_when_auth_is_required_but_no_key_is_configured(auth_runs, monkeypatch):
    runs_dir, run_id, _ = auth_runs
    monkeypatch.delenv("IF_TEST_NO_KEYS", raising=False)
    from indexfoundry.surfaces.http import HttpSettings

    settings = HttpSettings(
        runs_dir=runs_dir, run_id=run_id, port=0, endpoints=["health"], api_keys_env="IF_TEST_NO_KEYS"
    )
    server = LiveServer(settings)
    with pytest.raises(RuntimeError):
        server.start(timeout=20)
    assert server.exit_code not in (None, 0)


@pytest.fixture(scope="module")
def open_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("open")
    return root / "runs", make_run(root)


def test_without_auth_no_key_is_needed(open_run):
    with live_server(*open_run) as server, server.client() as client:
        assert client.post("/search/semantic", json=SEARCH).status_code == 200
        assert client.get("/health").json()["auth_required"] is False


def test_cors_preflight_allows_only_the_configured_origins(open_run):
    allowed = "https://docs.example.org"
    with live_server(*open_run, cors_origins=[allowed]) as server, server.client() as client:
        preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
        ok = client.options("/search/semantic", headers={"Origin": allowed, **preflight})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == allowed
        refused = client.options("/search/semantic", headers={"Origin": "https://evil.example", **preflight})
        assert "access-control-allow-origin" not in refused.headers
        simple = client.post("/search/semantic", json=SEARCH, headers={"Origin": allowed})
        assert simple.headers["access-control-allow-origin"] == allowed
        assert "retry-after" in simple.headers["access-control-expose-headers"].lower()


def test_without_configured_origins_no_cors_headers_are_sent(open_run):
    with live_server(*open_run) as server, server.client() as client:
        response = client.post("/search/semantic", json=SEARCH, headers={"Origin": "https://docs.example.org"})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


def test_the_rate_limiter_allows_the_burst_then_answers_429_with_retry_after(open_run):
    limit = RateLimitConfig(requests_per_minute=6, burst=3)
    with live_server(*open_run, rate_limit=limit) as server, server.client() as client:
        statuses = [client.post("/search/semantic", json=SEARCH).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        refused = client.post("/search/semantic", json=SEARCH)
        assert refused.status_code == 429
        assert code_of(refused) == "RATE_LIMITED"
        assert refused.json()["error"]["recoverable"] is True
        assert 1 <= int(refused.headers["retry-after"]) <= 10
        # /health is never rate limited.
        assert all(client.get("/health").status_code == 200 for _ in range(5))


def test_rate_limiting_can_be_switched_off(open_run):
    with live_server(*open_run, rate_limit=RateLimitConfig(enabled=False)) as server, server.client() as client:
        assert {client.post("/search/semantic", json=SEARCH).status_code for _ in range(25)} == {200}
