"""What `scripts/setup.sh` installs: CPU torch from PyTorch's index on Linux, then the default index."""

from __future__ import annotations

import os
import subprocess
import tomllib

from tests.conftest import REPO

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _torch_commands(os_name: str) -> list[str]:
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "setup.sh"), "--print-torch-command"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "SETUP_OS": os_name},
        timeout=30,
    )
    return done.stdout.strip().splitlines()


def test_on_linux_torch_comes_from_the_cpu_index_first_failing_fast_then_the_default_index():
    first, fallback = _torch_commands("Linux")
    args = first.split()
    assert args[args.index("--index-url") + 1] == CPU_INDEX
    assert args[args.index("--retries") + 1] == "0" and "--timeout" in args
    assert args[-1] == "torch==2.13.0"  # the index applies to the pinned torch only
    assert "--index-url" not in fallback and fallback.split()[-1] == "torch==2.13.0"


def test_on_macos_and_windows_torch_comes_from_the_default_index_where_wheels_are_cpu_only():
    for os_name in ("Darwin", "MINGW64_NT-10.0"):
        assert _torch_commands(os_name) == ["python -m pip install -q torch==2.13.0"]


def test_the_project_license_is_an_spdx_expression_so_setuptools_does_not_warn():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT"


def test_setup_makes_the_local_models_file_once_per_machine_and_goes_on_if_it_cannot():
    script = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    step = next(line for line in script.splitlines() if "index prepare" in line)
    assert step.startswith("if ! .venv/bin/indexfoundry index prepare --model local")
    assert script.index("pip install -q -e") < script.index(step)  # after the package is installed
