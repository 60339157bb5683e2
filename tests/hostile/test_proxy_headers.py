"""The rate limit and the request log believe X-Forwarded-For only from configured proxies
(with uvicorn's default, a loopback client set its own address per
request and 30 of 30 rapid requests passed a 10-burst limit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from indexfoundry.models.config import RateLimitConfig, ServeConfig
from tests.integration.http_support import live_server, make_run

SEARCH = {"query": "install", "top_k": 2}
SPOOFS = [
    {"X-Forwarded-For": "203.0.113.{i}"},
    {"X-Forwarded-For": "203.0.113.{i}, 127.0.0.1"},
    {"X-Forwarded-For": "127.0.0.1, 203.0.113.{i}"},
    {"Forwarded": "for=203.0.113.{i}"},
    {"X-Real-IP": "203.0.113.{i}"},
    {"X-Forwarded-For": "[2001:db8::{i}]"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("proxy")
    return root / "runs", make_run(root)


def _logged_clients(runs_dir: Path, run_id: str) -> set[str | None]:
    path = runs_dir / run_id / "logs" / "requests.ndjson"
    return {json.loads(line).get("client") for line in path.read_text().splitlines()}


@pytest.mark.parametrize("spoof", SPOOFS, ids=lambda s: next(iter(s)) + ":" + next(iter(s.values())).split(".")[0])
def test_forwarded_headers_from_an_untrusted_client_neither_dodge_the_rate_limit_nor_reach_the_log(
    served: tuple[Path, str], spoof: dict[str, str]
):
    limit = RateLimitConfig(requests_per_minute=6, burst=10)
    with live_server(*served, rate_limit=limit, log_requests=True) as server, server.client() as client:
        statuses = [
            client.post(
                "/search/semantic", json=SEARCH, headers={k: v.format(i=i) for k, v in spoof.items()}
            ).status_code
            for i in range(30)
        ]
    assert statuses.count(200) <= 11  # the burst (plus at most one token refilled meanwhile)
    assert statuses.count(429) >= 19
    assert _logged_clients(*served) <= {"127.0.0.1"}


def test_a_configured_proxy_is_believed_for_the_rate_limit_and_the_log(tmp_path: Path):
    runs_dir, run_id = tmp_path / "runs", make_run(tmp_path)
    limit = RateLimitConfig(requests_per_minute=6, burst=2)
    with (
        live_server(runs_dir, run_id, rate_limit=limit, log_requests=True, trusted_proxies=["127.0.0.0/8"]) as server,
        server.client() as client,
    ):
        forwarded = [
            client.post("/search/semantic", json=SEARCH, headers={"X-Forwarded-For": f"198.51.100.{i}"}).status_code
            for i in range(6)
        ]
        same = [
            client.post("/search/semantic", json=SEARCH, headers={"X-Forwarded-For": "198.51.100.200"}).status_code
            for _ in range(4)
        ]
    assert forwarded == [200] * 6  # six clients behind the proxy, one request each
    assert same.count(429) >= 1  # one client behind the proxy is still limited
    assert "198.51.100.3" in _logged_clients(runs_dir, run_id)


@pytest.mark.parametrize("entry", ["*", "example.com", "10.0.0.0/33", "", "127.0.0.1\n"])
def test_trusted_proxies_must_be_addresses_or_networks(entry: str):
    with pytest.raises(ValidationError):
        ServeConfig(trusted_proxies=[entry])


def test_no_proxy_is_trusted_by_default():
    assert ServeConfig().trusted_proxies == []


# ------------------------------------------------------------------ "also found": what answers without a key
KEY = "proxy-test-key-0123456789"


def test_with_auth_on_the_spec_needs_a_key_and_only_health_and_the_static_page_shell_answer_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    runs_dir, run_id = tmp_path / "runs", make_run(tmp_path, serve={"require_auth": True})
    monkeypatch.setenv("IF_PROXY_TEST_KEYS", KEY)
    with live_server(runs_dir, run_id, api_keys_env="IF_PROXY_TEST_KEYS") as server, server.client() as client:
        spec = client.get("/openapi.json")
        assert spec.status_code == 401
        assert spec.json()["error"]["code"] == "AUTH_REQUIRED"
        with_key = client.get("/openapi.json", headers={"X-API-Key": KEY})
        assert with_key.status_code == 200 and with_key.json()["openapi"].startswith("3.1")
        assert client.get("/health").status_code == 200
        root = server.root
        page = client.get(root + "/")
        assert page.status_code == 200
        assert run_id not in page.text  # a static shell: no data of the run without a key
        assert client.post("/search/semantic", json=SEARCH).status_code == 401
