"""A real local Ray cluster for the tests, inside a network namespace with only loopback up.

Ray binds the machine's interface address even when told 127.0.0.1, so the head node, a
second worker node and the driver all run inside a network namespace the fixture creates
(``ip netns add``; ``lo`` up, nothing else): no traffic leaves loopback. Every process of the
cluster carries a marker environment variable; teardown stops the two ``ray start --block``
process groups by pid, then any leftover marked process, then deletes the namespace.
Where a namespace cannot be made (not root, no ``ip``), the tests skip and say why.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).parent / "ray"
PORT = 6379  # the namespace has its own ports: nothing else listens there
MARK = "INDEXFOUNDRY_TEST_RAY_CLUSTER"


def _unavailable() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray is not installed (pip install 'indexfoundry[ray]')"
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is missing: scripts/setup.sh --dev installs it"
    if os.geteuid() != 0:
        return "creating a network namespace needs root; the Ray tests run the cluster inside one"
    return None


@dataclass
class RayCluster:
    """A head node and one more worker node (1 CPU each) on 127.0.0.1 inside ``netns``."""

    netns: str
    temp_dir: Path
    token: str
    env: dict[str, str]
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{PORT}"

    def command(self, args: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *args]

    def run(self, args: list[str], timeout: float = 600, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run ``args`` inside the namespace (the driver: a CLI call or a test script)."""
        return subprocess.run(
            self.command(args), env=self.env, capture_output=True, text=True, timeout=timeout, **kwargs
        )

    def popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
        )

    def marked_pids(self) -> list[int]:
        """Every live process that belongs to this cluster (found by its marker variable)."""
        found: list[int] = []
        needle = f"{MARK}={self.token}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def busy_workers(self, title: str) -> list[int]:
        """Pids of this cluster's Ray worker processes now running ``title`` (their process title)."""
        pids = []
        for pid in self.marked_pids():
            with contextlib.suppress(OSError):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if cmdline.startswith(f"ray::{title}"):
                    pids.append(pid)
        return pids

    def stop(self) -> None:
        for node in reversed(self.nodes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.pid, signal.SIGTERM)
        for node in self.nodes:
            try:
                node.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.pid, signal.SIGKILL)
                node.wait(timeout=10)

        def none_left() -> bool:
            left = self.marked_pids()
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return not left

        wait_for(none_left, timeout=10, interval=0.2)
        subprocess.run(["ip", "netns", "del", self.netns], check=False, capture_output=True)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _wait_for_nodes(cluster: RayCluster, count: int) -> None:
    probe = (
        "import ray, sys\n"
        "from tests.waiting import wait_for\n"
        f"ray.init(address={cluster.address!r}, log_to_driver=False)\n"
        f"if not wait_for(lambda: sum(1 for n in ray.nodes() if n['Alive']) >= {count}, timeout=90, interval=0.5):\n"
        "    sys.exit('nodes did not join')\n"
    )
    done = cluster.run([sys.executable, "-c", probe], timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"the Ray cluster did not come up: {done.stderr[-2000:]}")


@contextlib.contextmanager
def ray_cluster() -> Iterator[RayCluster]:
    """Start the cluster (skip with the reason where it cannot be), yield it, tear it down."""
    reason = _unavailable()
    if reason is not None:
        pytest.skip(reason)
    name = f"ifray-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {made.stderr.strip()}")
    token = uuid.uuid4().hex
    # Short: Ray's socket paths must fit in 107 bytes.
    temp_dir = Path(tempfile.mkdtemp(prefix="ifr", dir="/tmp"))
    env = {
        **os.environ,
        MARK: token,
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
        "PYTHONHASHSEED": "0",
    }
    cluster = RayCluster(name, temp_dir, token, env)
    stack = contextlib.ExitStack()
    try:
        lo_up = ["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"]
        up = subprocess.run(lo_up, capture_output=True, text=True)
        if up.returncode != 0:
            pytest.skip(f"cannot enter a network namespace here: {up.stderr.strip()}")
        common = [
            "--num-cpus",
            "1",
            "--object-store-memory",
            str(200 * 1024 * 1024),
            "--disable-usage-stats",
            "--block",
        ]
        log = stack.enter_context((temp_dir / "nodes.log").open("ab"))
        head = [str(RAY), "start", "--head", "--port", str(PORT), "--include-dashboard=false"]
        head += ["--temp-dir", str(temp_dir), *common]
        cluster.nodes.append(
            subprocess.Popen(cluster.command(head), env=env, stdout=log, stderr=log, start_new_session=True)
        )
        _wait_for_nodes(cluster, 1)
        worker = [str(RAY), "start", "--address", cluster.address, *common]
        cluster.nodes.append(
            subprocess.Popen(cluster.command(worker), env=env, stdout=log, stderr=log, start_new_session=True)
        )
        _wait_for_nodes(cluster, 2)
        yield cluster
    finally:
        cluster.stop()
        stack.close()


def driver(cluster: RayCluster, *args: str, timeout: float = 600) -> dict[str, Any]:
    """Run ``tests/integration/ray_driver.py`` inside the namespace; its JSON output."""
    done = cluster.run([sys.executable, "-m", "tests.integration.ray_driver", *args], timeout=timeout, cwd=REPO)
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
