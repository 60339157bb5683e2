"""The executor seam and the choice of executor, without a cluster: order, the missing extra,
an unreachable cluster refused before a run exists, and an executor that never reaches the
run's frozen config or fingerprints."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import ExecutionConfig
from indexfoundry.phases.base import LazyItems
from indexfoundry.pipeline.executors import LocalExecutor, open_executor
from tests.conftest import SAMPLE_DOCS, folder_config, write_config, write_tree


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_local_executor_maps_in_item_order_and_reports_each_result():
    seen: list[tuple[int, int]] = []
    results = LocalExecutor().map(lambda x: x * x, [3, 1, 2], on_result=lambda i, r: seen.append((i, r)))
    assert results == [9, 1, 4]
    assert seen == [(0, 9), (1, 1), (2, 4)]


def test_lazy_items_are_made_only_when_read():
    made: list[int] = []
    items = LazyItems(3, lambda i: made.append(i) or i * 10)
    assert len(items) == 3 and made == []
    assert items[2] == 20 and items[-1] == 20 and made == [2, 2]
    with pytest.raises(IndexError):
        items[3]


def test_the_ray_executor_without_the_extra_is_config_invalid_naming_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if it were not installed
    monkeypatch.delitem(sys.modules, "indexfoundry.pipeline.ray_executor", raising=False)
    with pytest.raises(IndexFoundryError) as caught:
        open_executor(ExecutionConfig(engine="ray"))
    assert caught.value.code == "CONFIG_INVALID"
    assert "indexfoundry[ray]" in (caught.value.suggestion or "")


def test_an_unreachable_cluster_is_a_recoverable_config_invalid_with_its_address():
    pytest.importorskip("ray")
    address = f"127.0.0.1:{closed_port()}"
    with pytest.raises(IndexFoundryError) as caught:
        open_executor(ExecutionConfig(engine="ray", address=address))
    assert caught.value.code == "CONFIG_INVALID" and caught.value.recoverable
    assert caught.value.details["address"] == address


def test_pipeline_run_on_an_unreachable_cluster_exits_2_before_any_run_exists(tmp_path: Path):
    pytest.importorskip("ray")
    folder = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    config = write_config(tmp_path / "c.yaml", folder_config(folder))
    runs = tmp_path / "runs"
    address = f"127.0.0.1:{closed_port()}"
    cli = [sys.executable, "-m", "indexfoundry", "pipeline", "run", str(config), "--runs-dir", str(runs)]
    done = subprocess.run(
        [*cli, "--executor", "ray", "--ray-address", address],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("CONFIG_INVALID: ") and address in done.stderr
    assert not runs.exists() or not any(runs.iterdir())


def test_a_malformed_ray_address_is_config_invalid(tmp_path: Path):
    folder = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    config = write_config(tmp_path / "c.yaml", folder_config(folder))
    with pytest.raises(IndexFoundryError) as caught:
        api.pipeline_run(config, runs_dir=tmp_path / "runs", ray_address="http://10.0.0.1/")
    assert caught.value.code == "CONFIG_INVALID"


def test_the_executor_is_left_out_of_the_frozen_config_and_the_fingerprints(tmp_path: Path):
    folder = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    plain = write_config(tmp_path / "a.yaml", folder_config(folder))
    tuned = write_config(
        tmp_path / "b.yaml", folder_config(folder, execution={"engine": "local", "max_retries": 5, "num_gpus": 1})
    )
    first = api.pipeline_run(plain, runs_dir=tmp_path / "runs")
    again = api.pipeline_run(tuned, runs_dir=tmp_path / "runs", run_id=first.run_id)
    assert {p.status for p in again.phases.values()} == {"skipped"}
    frozen = json.loads((tmp_path / "runs" / first.run_id / "config.json").read_text())
    assert "execution" not in frozen


def test_an_agent_can_send_a_run_only_to_a_ray_cluster_the_operator_allowed(tmp_path: Path):
    from indexfoundry.surfaces.mcp.security import AgentPolicy, Roots, guard_arguments

    roots = Roots([tmp_path])
    config = {"config": {"connect": {"sources": [{"type": "folder", "path": str(tmp_path)}]}}}
    for execution in ({"engine": "ray"}, {"engine": "ray", "address": "10.1.2.3:6379"}):
        with pytest.raises(IndexFoundryError) as caught:
            guard_arguments({"config": {**config["config"], "execution": execution}}, roots, tmp_path)
        assert caught.value.code == "DOMAIN_BLOCKED"
    allowed = AgentPolicy(allowed_endpoints=("127.0.0.1:6379",))
    chosen = {**config["config"], "execution": {"engine": "ray", "address": "ray://127.0.0.1:6379"}}
    assert guard_arguments({"config": chosen}, roots, tmp_path, allowed)["config"]["execution"]["address"]
    local = {**config["config"], "execution": {"engine": "local"}}
    assert guard_arguments({"config": local}, roots, tmp_path)["config"]["execution"] == {"engine": "local"}


def test_a_config_asking_for_ray_without_the_extra_is_refused_by_preflight(monkeypatch: pytest.MonkeyPatch):
    from indexfoundry.models.config import PipelineConfig
    from indexfoundry.pipeline import preflight

    monkeypatch.setattr(preflight, "_installed", lambda module: module != "ray")
    config = PipelineConfig.model_validate(
        {"connect": {"sources": [{"type": "folder", "path": "."}]}, "execution": {"engine": "ray"}}
    )
    with pytest.raises(IndexFoundryError) as caught:
        preflight.preflight(config)
    assert caught.value.code == "CONFIG_INVALID"
    assert "indexfoundry[ray]" in caught.value.message
