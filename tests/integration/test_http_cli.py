"""``indexfoundry serve start|status|stop|openapi`` as real processes, and the serve tools."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool, load_tools
from indexfoundry.errors import IndexFoundryError
from indexfoundry.pipeline.inuse import pid_alive, runs_in_use
from indexfoundry.storage.layout import server_pid_file
from indexfoundry.surfaces.http.processes import serve_stop
from tests.integration.http_support import make_run


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args], capture_output=True, text=True, timeout=120, check=False
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("cli")
    return root / "runs", make_run(root)


@pytest.mark.slow
def test_background_server_starts_reports_status_and_stops_gracefully(runs):
    runs_dir, run_id = runs
    port = free_port()
    started = cli(
        "serve",
        "start",
        "--run-id",
        "latest",
        "--runs-dir",
        str(runs_dir),
        "--port",
        str(port),
        "--background",
        "--json",
    )
    assert started.returncode == 0, started.stderr
    server = json.loads(started.stdout)["server"]
    try:
        assert server["url"] == f"http://127.0.0.1:{port}"
        health = httpx.get(f"http://127.0.0.1:{port}/api/v1/health").json()
        assert health["run_id"] == run_id
        assert run_id in runs_in_use(runs_dir)
        status = json.loads(cli("serve", "status", "--runs-dir", str(runs_dir), "--json").stdout)
        assert [(s["pid"], s["healthy"], s["serving_run_id"]) for s in status] == [(server["pid"], True, run_id)]
        again = cli("serve", "start", "--runs-dir", str(runs_dir), "--port", str(port), "--background", "--json")
        assert json.loads(again.stdout)["already_running"] is True
    finally:
        stopped = cli("serve", "stop", "--runs-dir", str(runs_dir), "--port", str(port), "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert [s["pid"] for s in json.loads(stopped.stdout)["stopped"]] == [server["pid"]]
    assert not pid_alive(server["pid"])
    assert not server_pid_file(runs_dir, port).exists()
    assert run_id not in runs_in_use(runs_dir)
    assert json.loads(cli("serve", "status", "--runs-dir", str(runs_dir), "--json").stdout) == []


def test_serving_a_run_that_does_not_exist_exits_3_run_not_found(runs):
    done = cli("serve", "start", "--run-id", "01a22a3e-0000-7000-8000-000000000000", "--runs-dir", str(runs[0]))
    assert done.returncode == 3
    assert done.stderr.startswith("RUN_NOT_FOUND: ")
    assert "Traceback" not in done.stderr


def test_a_busy_port_is_refused_with_config_invalid(runs):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = cli("serve", "start", "--runs-dir", str(runs[0]), "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.startswith("CONFIG_INVALID: ")


def test_stopping_when_nothing_runs_on_the_port_is_an_error(runs):
    done = cli("serve", "stop", "--runs-dir", str(runs[0]), "--port", str(free_port()))
    assert done.returncode == 3


def test_serve_openapi_writes_a_valid_openapi_31_spec(runs):
    done = cli("serve", "openapi", "--run-id", "latest", "--runs-dir", str(runs[0]), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    spec = json.loads(Path(out["path"]).read_text(encoding="utf-8"))
    validate(spec)
    assert spec["openapi"] == out["openapi_version"] == "3.1.0"


def test_both_serve_tools_are_registered_with_strict_inputs():
    tools = load_tools()
    assert {"indexfoundry_serve_openapi", "indexfoundry_serve_start"} <= set(tools)
    for name in ("indexfoundry_serve_openapi", "indexfoundry_serve_start"):
        assert tools[name].input_model.model_json_schema()["additionalProperties"] is False
    with pytest.raises(IndexFoundryError) as bad_port:
        call_tool("indexfoundry_serve_start", {"run_id": "latest", "port": 80})
    assert bad_port.value.code == "CONFIG_INVALID"
    with pytest.raises(IndexFoundryError) as extra:
        call_tool("indexfoundry_serve_openapi", {"run_id": "latest", "bogus": True})
    assert extra.value.code == "CONFIG_INVALID"


def test_serve_openapi_tool_limits_the_spec_to_the_endpoints_asked_for(runs):
    runs_dir, run_id = runs
    out = call_tool(
        "indexfoundry_serve_openapi",
        {"run_id": run_id, "endpoints": ["search_semantic", "health"], "api_info": {"base_path": "/v2"}},
        runs_dir=runs_dir,
    )
    assert out.model_dump()["paths"] == ["/v2/health", "/v2/search/semantic"]
    api.serve_openapi(run_id, runs_dir=runs_dir)  # back to the run's configured spec


def test_serve_start_tool_starts_a_background_server_that_serve_stop_stops(runs):
    runs_dir, run_id = runs
    port = free_port()
    out = call_tool(
        "indexfoundry_serve_start",
        {"run_id": run_id, "port": port, "rate_limit": {"requests_per_minute": 120, "burst": 5}},
        runs_dir=runs_dir,
    ).model_dump()
    try:
        assert out["retrieval_endpoint"] == f"http://127.0.0.1:{port}/api/v1"
        assert httpx.get(out["retrieval_endpoint"] + "/health").json()["run_id"] == run_id
    finally:
        stopped = serve_stop(runs_dir=runs_dir, port=port)
    assert [s.pid for s in stopped.stopped] == [out["server"]["pid"]]
    assert not pid_alive(out["server"]["pid"]) or os.waitpid(out["server"]["pid"], os.WNOHANG) is not None


def test_requiring_auth_without_any_key_is_one_config_invalid_line(tmp_path: Path):
    run_id = make_run(tmp_path, serve={"require_auth": True})
    env_free = cli(
        "serve", "start", "--run-id", run_id, "--runs-dir", str(tmp_path / "runs"), "--port", str(free_port())
    )
    assert env_free.returncode == 2
    assert env_free.stderr.startswith("CONFIG_INVALID: ")
    assert "Traceback" not in env_free.stderr


def test_pipeline_auto_start_serves_the_new_run_and_reports_its_endpoint(tmp_path: Path):
    from tests.conftest import SAMPLE_DOCS, folder_config, write_tree

    port = free_port()
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    runs_dir = tmp_path / "runs"
    out = api.pipeline_run(folder_config(docs, serve={"auto_start": True, "port": port}), runs_dir=runs_dir)
    try:
        assert out.retrieval_endpoint == f"http://127.0.0.1:{port}/api/v1"
        assert httpx.get(out.retrieval_endpoint + "/health").json()["run_id"] == out.run_id
    finally:
        serve_stop(runs_dir=runs_dir, port=port)
