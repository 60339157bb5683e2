"""Docs mode, cold: what a first build does before its chunks are searchable.

Runs ``api.pipeline_run`` of the docs-mode config of a folder (default: the mkdocs 1.4.2 docs)
into a new runs folder, stops it when the index phase would start (the chunks are committed
then: ``search_docs`` answers from here on), prints when each phase started and ended, and
cProfile's heaviest calls.

    PYTHONPATH=src nice -n 10 .venv/bin/python bench/first_build_profile.py
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
DEFAULT_DOCS = CORPORA / "markdown" / "mkdocs-1.4.2" / "docs"


class _Stop(Exception):
    """Raised where the index phase would start."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--model", default="local")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    from indexfoundry import api
    from indexfoundry.app.docs_index import docs_config
    from indexfoundry.pipeline.runner import run_phase_body

    started = time.monotonic()

    def runner(ctx: Any, phase: Any) -> Any:
        print(f"{time.monotonic() - started:6.2f} s  {phase.name} starts", flush=True)
        if phase.name == "index":
            raise _Stop
        outcome = run_phase_body(ctx, phase)
        print(f"{time.monotonic() - started:6.2f} s  {phase.name} ends", flush=True)
        return outcome

    with tempfile.TemporaryDirectory(prefix="first-build-") as tmp:
        runs = Path(tmp) / "runs"
        profile = cProfile.Profile()
        profile.enable()
        with contextlib.suppress(_Stop):
            api.pipeline_run(docs_config(args.docs.resolve(), runs, args.model), runs_dir=runs, phase_runner=runner)
        profile.disable()
    print(f"{time.monotonic() - started:6.2f} s  chunks committed; load average {os.getloadavg()}", flush=True)
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
