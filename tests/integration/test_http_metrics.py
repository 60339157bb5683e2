"""``GET /metrics`` of the HTTP API (a real uvicorn server), read with prometheus-client's own parser:
the counters move with the requests the test makes, and the served run's figures are its manifest's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from indexfoundry import api
from indexfoundry.models.config import RateLimitConfig
from tests.integration.http_support import LiveServer, live_server, make_run

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
KEY = "metrics-test-key-0123456789"


def scrape(server: LiveServer, headers: dict[str, str] | None = None) -> Samples:
    """Every sample of one scrape, by name and sorted labels (parsed by the library's parser)."""
    response = httpx.get(server.root + "/metrics", headers=headers or {}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    root = tmp_path_factory.mktemp("metrics")
    run_id = make_run(root)
    with live_server(root / "runs", run_id) as server:
        yield server, run_id


def test_request_counters_and_search_histograms_move_with_the_requests_made(served):
    server, _ = served
    before = scrape(server)
    with server.client() as client:
        for _ in range(2):
            assert client.post("/search/keyword", json={"query": "install"}).status_code == 200
        assert client.post("/search/semantic", json={"query": "theme colours"}).status_code == 200
        assert client.post("/search", json={"query": "theme"}).status_code == 200  # the run's default: hybrid
        assert client.get("/documents/" + "0" * 64).status_code == 404
    after = scrape(server)
    base = server.settings.base_path

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "indexfoundry_http_requests_total"
    assert moved(requests, route=f"{base}/search/keyword", method="POST", status="200") == 2
    assert moved(requests, route=f"{base}/search/semantic", method="POST", status="200") == 1
    assert moved(requests, route=f"{base}/search", method="POST", status="200") == 1
    assert moved(requests, route=f"{base}/documents/{{doc_id}}", method="GET", status="404") == 1
    assert moved(requests, route="/metrics", method="GET", status="200") == 1  # the first scrape
    histogram = "indexfoundry_search_duration_seconds"
    assert moved(f"{histogram}_count", mode="keyword") == 2
    assert moved(f"{histogram}_count", mode="semantic") == 1
    assert moved(f"{histogram}_count", mode="hybrid") == 1
    assert moved(f"{histogram}_bucket", mode="keyword", le="+Inf") == 2
    assert value(after, f"{histogram}_sum", mode="keyword") > 0


def test_the_served_run_its_counts_and_ages_are_those_of_its_manifest(served):
    server, run_id = served
    samples = scrape(server)
    status = api.status(run_id, runs_dir=server.settings.runs_dir)
    assert value(samples, "indexfoundry_served_run_info", run_id=run_id) == 1
    assert value(samples, "indexfoundry_served_documents") == status.totals.documents_extracted
    assert value(samples, "indexfoundry_served_chunks") == status.totals.chunks_created > 0
    assert value(samples, "indexfoundry_served_vectors") == status.totals.vectors_indexed > 0
    assert value(samples, "indexfoundry_served_run_age_seconds") >= 0
    assert ("indexfoundry_latest_run_age_seconds", ()) in samples


def test_rate_limited_requests_are_counted_and_scrapes_are_never_limited(tmp_path: Path):
    run_id = make_run(tmp_path)
    limit = RateLimitConfig(enabled=True, requests_per_minute=1, burst=2)
    with live_server(tmp_path / "runs", run_id, rate_limit=limit) as server, server.client() as client:
        statuses = [client.post("/search/keyword", json={"query": "install"}).status_code for _ in range(5)]
        assert statuses.count(429) == 3, statuses
        samples = scrape(server)
        for _ in range(3):
            samples = scrape(server)
    route = f"{server.settings.base_path}/search/keyword"
    assert value(samples, "indexfoundry_http_rate_limited_requests_total", route=route) == 3
    assert value(samples, "indexfoundry_http_requests_total", route=route, method="POST", status="429") == 3
    assert value(samples, "indexfoundry_http_requests_total", route="/metrics", method="GET", status="200") == 3


def test_a_server_that_requires_a_key_requires_it_for_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    run_id = make_run(tmp_path)
    monkeypatch.setenv("IF_METRICS_KEYS", KEY)
    with live_server(tmp_path / "runs", run_id, require_auth=True, api_keys_env="IF_METRICS_KEYS") as server:
        refused = httpx.get(server.root + "/metrics", timeout=30)
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "AUTH_REQUIRED"
        samples = scrape(server, {"Authorization": f"Bearer {KEY}"})
    assert value(samples, "indexfoundry_served_run_info", run_id=run_id) == 1
