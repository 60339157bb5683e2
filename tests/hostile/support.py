"""Helpers for the hostile-input tests: run the pipeline in a child process and measure it.

A child process gives each test its own peak-RSS figure and a wall-clock bound, so one test's
allocations never leak into another's figure. The figure is the child's ``VmHWM`` (the high-water
mark of its own address space since ``exec``), not ``ru_maxrss``: Linux carries the parent's peak
across fork and exec into the child's ``ru_maxrss``, so under a long pytest session that figure is
the test runner's memory, not the pipeline's. Extraction workers are capped by
``extract.memory_mb`` (RLIMIT_AS) on top of that, and the child reports which document parsers it
imported itself, so a test can show that hostile bytes were parsed only inside those workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import REPO, write_config

MB = 1024 * 1024

_CHILD = r"""
import json, resource, sys, time
def peak_rss_mb():
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from indexfoundry import api
from indexfoundry.storage.layout import RunLayout
start = time.monotonic()
out = api.pipeline_run(sys.argv[1], runs_dir=sys.argv[2])
seconds = time.monotonic() - start
layout = RunLayout(__import__("pathlib").Path(sys.argv[2]) / out.run_id)
PARSERS = {"pdfminer", "pypdfium2", "docx", "markdownify"}
errors = []
if layout.errors_log.is_file():
    errors = [json.loads(line) for line in layout.errors_log.read_text(encoding="utf-8").splitlines()]
print(json.dumps({
    "status": out.status,
    "run_id": out.run_id,
    "seconds": seconds,
    "peak_rss_mb": peak_rss_mb(),
    "parsers_loaded": sorted(m for m in sys.modules if m.split(".")[0] in PARSERS),
    "errors": errors,
    "chunks": out.summary.chunks_indexed,
}))
"""


@dataclass
class Measured:
    """What a pipeline run in a child process did, and what it cost."""

    status: str
    run_id: str
    seconds: float
    peak_rss_mb: float  # the pipeline process's own peak (VmHWM), workers not included
    errors: list[dict[str, Any]] = field(default_factory=list)
    chunks: int = 0
    # Document-parser packages the pipeline process imported itself (the workers' are not counted).
    parsers_loaded: list[str] = field(default_factory=list)

    def codes(self) -> dict[str, str]:
        """``{uri: code}`` of the recorded document errors."""
        return {str(e.get("uri")): str(e["code"]) for e in self.errors}


def run_pipeline_measured(config: dict[str, Any], tmp_path: Path, runs_dir: Path, timeout: float = 300) -> Measured:
    """Run the whole pipeline on ``config`` in a fresh interpreter; fail on a crash or a hang."""
    config_path = write_config(tmp_path / "hostile-config.yaml", config)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(config_path), str(runs_dir)],
        capture_output=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, f"pipeline child crashed ({proc.returncode}): {proc.stderr.decode()[-3000:]}"
    data = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    return Measured(**data)


@dataclass
class Budget:
    seconds: float = 0.0
    peak_mb: float = 0.0


@contextmanager
def bounded(seconds: float, peak_mb: float) -> Iterator[Budget]:
    """Assert the block finishes within ``seconds`` and allocates at most ``peak_mb`` (tracemalloc)."""
    budget = Budget()
    tracemalloc.start()
    start = time.monotonic()
    try:
        yield budget
    finally:
        budget.seconds = time.monotonic() - start
        budget.peak_mb = tracemalloc.get_traced_memory()[1] / MB
        tracemalloc.stop()
    assert budget.seconds < seconds, f"took {budget.seconds:.1f} s (bound {seconds} s)"
    assert budget.peak_mb < peak_mb, f"peak Python allocation {budget.peak_mb:.1f} MB (bound {peak_mb} MB)"


def hostile_config(folder: Path, glob: str = "**/*", **extract: Any) -> dict[str, Any]:
    """A folder config over every file, with the hash embedder and worker limits for hostile files."""
    return {
        "connect": {"sources": [{"type": "folder", "path": str(folder), "glob": glob}]},
        "extract": {"workers": 1, "timeout_s": 60, "memory_mb": 768, **extract},
        "normalize": {"chunk_strategy": "recursive"},
        "index": {"embedding_model": "hash"},
    }


def everything_written(root: Path) -> Iterator[tuple[Path, bytes]]:
    """Every file under ``root`` with its bytes (for searching a run for leaked secrets)."""
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield path, path.read_bytes()
