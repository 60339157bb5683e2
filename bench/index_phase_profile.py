"""Profile the index phase on the suite's heaviest input: the 49 MB one-line document of
``tests/hostile/test_normalize_attacks.py`` (built as that test builds it, with its config).

Runs the whole pipeline once (a first run: a new Chroma collection) with the index phase under
cProfile, then, with ``--force-rerun``, the index phase again with ``--force`` (the same
collection, every id already there). Prints each phase's wall time from the manifest, the
index phase's top functions by cumulative time, and a JSON line of the figures.

    PYTHONPATH=src nice -n 10 .venv/bin/python bench/index_phase_profile.py --force-rerun
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _profiled(profiles: list[tuple[str, cProfile.Profile, float]]) -> Any:
    from indexfoundry.pipeline.runner import run_phase_body

    def runner(ctx: Any, phase: Any) -> Any:
        if phase.name != "index":
            return run_phase_body(ctx, phase)
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        try:
            return run_phase_body(ctx, phase)
        finally:
            profile.disable()
            profiles.append((phase.name, profile, time.perf_counter() - start))

    return runner


def _top(profile: cProfile.Profile, limit: int) -> str:
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(limit)
    return out.getvalue()


def _force_index(layout: Any, phase_runner: Any) -> None:
    """``indexfoundry index --run-id ... --force`` (api.run_phase) with the profiling phase runner."""
    from indexfoundry.app.runs import _recorded_base
    from indexfoundry.app.serving import write_openapi
    from indexfoundry.models.config import load_global_config
    from indexfoundry.pipeline.runner import execute
    from indexfoundry.storage.manifest import load_run_config

    execute(
        layout,
        load_run_config(layout),
        global_config=load_global_config(),
        base_layout=_recorded_base(layout),
        phases=["index"],
        force_phases=["index"],
        phase_runner=phase_runner,
        openapi_writer=write_openapi,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=49)
    parser.add_argument("--force-rerun", action="store_true", help="also profile an index --force rerun")
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument(
        "--timeout-s", type=int, default=60, help="per-document limit (the test's 60; raise it on a busy machine)"
    )
    parser.add_argument("--keep", type=Path, default=None, help="folder to keep the runs in")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")

    from tests.hostile.support import MB, hostile_config
    from tests.hostile.test_normalize_attacks import GOOD, _one_line_file

    from indexfoundry import api
    from indexfoundry.storage.layout import RunLayout
    from indexfoundry.storage.manifest import load_manifest

    base = args.keep or Path(tempfile.mkdtemp(prefix="index-profile-"))
    folder, runs = base / "docs", base / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "good.md").write_text(GOOD)
    _one_line_file(folder / f"one-line-{args.size_mb}mb.md", args.size_mb * MB)
    config = hostile_config(folder, timeout_s=args.timeout_s, memory_mb=2048, workers=1)
    config["connect"]["sources"][0]["max_file_size_mb"] = 50
    config["normalize"]["detect_language"] = False

    profiles: list[tuple[str, cProfile.Profile, float]] = []
    start = time.monotonic()
    out = api.pipeline_run(config, runs_dir=runs, phase_runner=_profiled(profiles))
    total = time.monotonic() - start
    layout = RunLayout(runs / out.run_id)
    phases = {name: entry.duration_ms for name, entry in load_manifest(layout).phases.items()}
    figures: dict[str, Any] = {
        "size_mb": args.size_mb,
        "status": out.status,
        "chunks": out.summary.chunks_indexed,
        "pipeline_s": round(total, 1),
        "phase_ms": phases,
        "index_profiled_s": round(profiles[0][2], 1),
    }
    print(f"== first run: {total:.1f} s; phases (ms): {phases}")
    print(_top(profiles[0][1], args.top))
    if args.force_rerun:
        profiles.clear()
        _force_index(layout, _profiled(profiles))
        figures["index_force_profiled_s"] = round(profiles[0][2], 1)
        print(f"== index --force rerun: {profiles[0][2]:.1f} s")
        print(_top(profiles[0][1], args.top))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
