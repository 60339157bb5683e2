"""Serving 'latest': 503 until a run completes, then an atomic switch to each newly completed run."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from indexfoundry import api
from indexfoundry.pipeline.inuse import runs_in_use
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree
from tests.integration.http_support import live_server
from tests.waiting import wait_for


def wait_for_run(client: httpx.Client, run_id: str, timeout: float = 30.0) -> None:
    switched = wait_for(lambda: client.get("/health").json().get("run_id") == run_id, timeout=timeout)
    assert switched, "the server did not switch runs"


def test_latest_answers_503_until_a_run_completes_then_serves_it(tmp_path: Path):
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    with live_server(runs_dir, "latest", reload_interval_s=0.1) as server, server.client() as client:
        waiting = client.post("/search/semantic", json={"query": "install"})
        assert waiting.status_code == 503
        assert waiting.json()["error"]["code"] == "RUN_NOT_FOUND"
        assert waiting.json()["error"]["recoverable"] is True
        assert "retry-after" in waiting.headers
        assert client.get("/health").json()["status"] == "waiting"
        docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
        run_id = api.pipeline_run(folder_config(docs), runs_dir=runs_dir).run_id
        wait_for_run(client, run_id)
        assert client.post("/search/semantic", json={"query": "install"}).status_code == 200


def test_a_new_completed_run_is_swapped_in_while_every_request_succeeds(tmp_path: Path):
    runs_dir = tmp_path / "runs"
    first_docs = write_tree(tmp_path / "a", SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(first_docs), runs_dir=runs_dir).run_id
    with live_server(runs_dir, "latest", reload_interval_s=0.1) as server, server.client() as client:
        assert client.get("/health").json()["run_id"] == first
        assert first in runs_in_use(runs_dir)
        seen: list[tuple[int, str]] = []
        stop = threading.Event()

        def hammer() -> None:
            with server.client() as c:
                while not stop.is_set():
                    r = c.post("/search/semantic", json={"query": "galaxies and stars", "top_k": 1})
                    seen.append((r.status_code, r.json().get("run_id", "")))

        worker = threading.Thread(target=hammer)
        worker.start()
        try:
            extra = {**SAMPLE_DOCS, "space.md": "# Space\n\nGalaxies hold billions of stars and planets.\n"}
            second_docs = write_tree(tmp_path / "b", extra)
            second = api.pipeline_run(folder_config(second_docs), runs_dir=runs_dir).run_id
            wait_for_run(client, second)
            after = client.post("/search/semantic", json={"query": "galaxies and stars", "top_k": 1}).json()
        finally:
            stop.set()
            worker.join()
        assert after["results"][0]["source"]["uri"] == "b/space.md"
        assert seen and {status for status, _ in seen} == {200}
        assert {run for _, run in seen} <= {first, second}
        in_use = runs_in_use(runs_dir)
        assert second in in_use and first not in in_use
    assert second not in runs_in_use(runs_dir)
