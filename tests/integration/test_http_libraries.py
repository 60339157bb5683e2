"""Many libraries over HTTP: ``indexfoundry serve start --library ...`` as a real process (real
uvicorn), the /libraries endpoints with versions and ranges, and the OpenAPI spec."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from indexfoundry import api
from tests.integration.test_http_cli import free_port
from tests.integration.test_mcp_libraries import _config, _docs
from tests.waiting import wait_for


@contextmanager
def serving(*args: str) -> Iterator[str]:
    """``indexfoundry serve start ARGS --port P`` in the foreground; yields its base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexfoundry", "serve", "start", "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    try:

        def state() -> str | None:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    return "up"
            except httpx.HTTPError:
                pass
            return "exited" if proc.poll() is not None else None

        if wait_for(state, timeout=90, interval=0.1) != "up":
            proc.kill()
            raise AssertionError(proc.communicate(timeout=30)[0].decode())
        yield base
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=30)  # reaps it and closes its pipe


@pytest.mark.slow
def test_serve_start_with_libraries_lists_searches_and_reads_by_library_and_version_range(tmp_path: Path):
    runs = tmp_path / "runs"
    built = {
        (lib, ver): api.pipeline_run(_config(_docs(tmp_path, lib, ver)), runs_dir=runs).run_id
        for lib, ver in (("widget", "1.0"), ("widget", "2.0"), ("gadget", "1.4"))
    }
    spec = tmp_path / "libraries.yaml"
    spec.write_text(f"libraries:\n  - {{name: gadget, version: '1.4', source: {built['gadget', '1.4']}}}\n")
    flags = [f"--library=widget@{v}={built['widget', v]}" for v in ("1.0", "2.0")]
    args = ("--runs-dir", str(runs), "--libraries", str(spec), *flags, "--no-rate-limit")
    with serving(*args) as base, httpx.Client(base_url=base, timeout=30) as client:
        listed = client.get("/libraries").json()["libraries"]
        query = {"query": "installer flux sprocket requirements"}
        ranged = client.post("/libraries/search", json={**query, "library": "widget", "version": ">=1 <2"}).json()
        everything = client.post("/libraries/search", json={**query, "top_k": 10}).json()
        # The same page has the same path in every version: relative to each version's folder.
        page = client.get("/libraries/widget/page", params={"path": "install.md", "version": "1.x"}).json()
        section = client.get("/libraries/widget/section", params={"path": "install.md", "heading": "Steps"})
        stored = client.get("/libraries/widget/page", params={"path": "widget-2.0/install.md"})
        pages = client.get("/libraries/gadget/pages").json()
        missing = client.post("/libraries/search", json={**query, "library": "nope"})
        no_version = client.get("/libraries/widget/pages", params={"version": "9.x"})
        spec_paths = client.get("/openapi.json").json()["paths"]
        single_run = client.post("/search", json=query)
    assert [(lib["name"], lib["version"], lib["latest"]) for lib in listed] == [
        ("gadget", "1.4", True),
        ("widget", "2.0", True),
        ("widget", "1.0", False),
    ]
    assert [s["version"] for s in ranged["searched"]] == ["1.0"]
    assert ranged["results"] and {(r["library"], r["version"]) for r in ranged["results"]} == {("widget", "1.0")}
    assert [(s["library"], s["version"]) for s in everything["searched"]] == [("gadget", "1.4"), ("widget", "2.0")]
    assert {(r["library"], r["version"]) for r in everything["results"]} == {("gadget", "1.4"), ("widget", "2.0")}
    scores = [r["result"]["score"] for r in everything["results"]]
    assert scores == sorted(scores, reverse=True)
    assert page["version"] == "1.0" and page["run_id"] == built["widget", "1.0"]
    assert "widget 1.0 needs a calibrated flux sprocket" in page["text"]
    assert section.status_code == 200 and "Run the widget 2.0 installer twice." in section.json()["text"]
    assert page["path"] == "install.md" and section.json()["path"] == "install.md"
    assert stored.status_code == 200 and stored.json()["path"] == "install.md"  # the stored form is accepted
    assert [p["path"] for p in pages["pages"]] == ["install.md", "usage.md"]
    assert {r["path"] for r in everything["results"]} <= {"install.md", "usage.md"}
    assert all(r["result"]["source"]["uri"].endswith("/" + r["path"]) for r in everything["results"])
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    assert no_version.status_code == 404 and no_version.json()["error"]["code"] == "NOT_FOUND"
    ours = {"/libraries", "/libraries/search", "/libraries/{name}/pages", "/libraries/{name}/page"}
    assert {f"/api/v1{p}" for p in ours} <= set(spec_paths)
    assert "/api/v1/search" not in spec_paths and single_run.status_code == 404  # no single-run endpoints here
