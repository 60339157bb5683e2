"""The nightly recipes of docs/workflows.md work as written: the crontab line and the systemd
service's commands are read from the page and run (only their paths moved into a temporary
folder), for a first night, a night that reuses everything and a night refused with RUN_SHRANK."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from indexfoundry import api
from tests.conftest import folder_config, write_config, write_tree

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "workflows.md"
HOME = "/srv/docs-index"
TEXTFILES = "/var/lib/prometheus/node-exporter"
DOCS = {f"docs/page{n}.md": f"# Page {n}\n\nHow to configure part {n} of the widget.\n" for n in range(6)}

pytestmark = pytest.mark.slow


def fenced(language: str) -> list[str]:
    """The page's fenced blocks in ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)


def crontab_command() -> str:
    """The command of the page's crontab entry (the line after its five time fields)."""
    (block,) = fenced("cron")
    entries = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    entries = [line for line in entries if not re.match(r"^[A-Z_]+=", line)]  # MAILTO=...
    (entry,) = entries
    return entry.split(None, 5)[5]


def service_unit() -> configparser.SectionProxy:
    """The [Service] section of the page's indexfoundry-nightly.service."""
    (block,) = [b for b in fenced("ini") if b.startswith("# /etc/systemd/system/indexfoundry-nightly.service")]
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(block)
    return unit["Service"]


def moved(command: str, home: Path, textfiles: Path) -> str:
    return command.replace(HOME, str(home)).replace(TEXTFILES, str(textfiles))


def textfile(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(path.read_text(encoding="utf-8"))
        for sample in family.samples
    }


def test_the_crontab_line_and_the_systemd_service_run_as_written(tmp_path: Path):
    venv_bin = Path(sys.prefix) / "bin"
    if not (venv_bin / "indexfoundry").is_file():
        pytest.skip(f"no indexfoundry console script in {venv_bin}")
    home, textfiles = tmp_path / "docs-index", tmp_path / "node-exporter"
    docs = write_tree(home / "content", DOCS)
    (home / "logs").mkdir()
    textfiles.mkdir()
    (home / ".venv").symlink_to(Path(sys.prefix))
    write_config(home / "config.yaml", folder_config(docs))
    prom, runs = textfiles / "indexfoundry.prom", home / "runs"
    cron = moved(crontab_command(), home, textfiles)
    env = {key: value for key, value in os.environ.items() if key != "INDEXFOUNDRY_RUNS_DIR"}  # ./runs, as written

    # Night 1, from cron: a full run; nothing to mail.
    night = subprocess.run(["/bin/sh", "-c", cron], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert night.returncode == 0, night.stderr
    assert night.stdout == night.stderr == ""
    first = api.resolve_run_id(runs, "latest")
    assert f"run {first}" in (home / "logs" / "nightly.log").read_text(encoding="utf-8")
    figures = textfile(prom)
    assert figures[("indexfoundry_run_success", ())] == 1
    assert figures[("indexfoundry_run_info", (("run_id", first),))] == 1
    assert figures[("indexfoundry_run_documents", ())] == len(DOCS)

    # Night 2, from the systemd service: ExecStart, then ExecStartPost, in WorkingDirectory.
    service = service_unit()
    assert service["Type"] == "oneshot"
    cwd = Path(moved(service["WorkingDirectory"], home, textfiles))
    for key in ("ExecStart", "ExecStartPost"):
        argv = shlex.split(moved(service[key], home, textfiles))
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=300, check=False)
        assert done.returncode == 0, (key, done.stderr)
    second = api.resolve_run_id(runs, "latest")
    assert second != first
    assert api.status(second, runs_dir=runs).base_run_id == first
    assert textfile(prom)[("indexfoundry_run_info", (("run_id", second),))] == 1

    # Night 3: most sources are gone; the run is refused, cron mails why, latest stays.
    for name in sorted(DOCS)[1:]:
        (home / "content" / name).unlink()
    night = subprocess.run(["/bin/sh", "-c", cron], capture_output=True, text=True, env=env, timeout=300, check=False)
    mail = night.stdout + night.stderr
    assert "nightly run failed (exit 1)" in mail
    assert "RUN_SHRANK" in mail
    assert api.resolve_run_id(runs, "latest") == second
    figures = textfile(prom)
    assert figures[("indexfoundry_run_success", ())] == 0
    assert figures[("indexfoundry_run_error_codes", (("code", "RUN_SHRANK"),))] == 1
    assert figures[("indexfoundry_run_status", (("status", "failed"),))] == 1
