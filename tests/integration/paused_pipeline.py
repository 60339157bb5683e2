"""Test-only entry point: run the pipeline with one phase paused mid-way, so a test can SIGKILL it.

    python -m tests.integration.paused_pipeline CONFIG RUN_ID PHASE:SECONDS[,PHASE:SECONDS]

The pause is injected through the runner's ``phase_runner`` callback (``api.pipeline_run``):
the phase sleeps at its first progress step (mid-phase: some work done, nothing committed), or,
for a phase that reports no progress, after its work and before its manifest commit. The pause
is logged as a ``test_phase_delay`` event so the test knows when to kill. Production code has
no hook for this.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.phases.base import Phase, PhaseContext, PhaseOutcome


def parse_delays(spec: str) -> dict[str, float]:
    """``"extract:60,index:5"`` -> ``{"extract": 60.0, "index": 5.0}``."""
    delays: dict[str, float] = {}
    for part in spec.split(","):
        name, _, seconds = part.partition(":")
        if name.strip():
            delays[name.strip()] = float(seconds)
    return delays


class _PausingProgress:
    """Wraps the progress reporter; pauses once, at the phase's first progress step."""

    def __init__(self, inner: Any, pause: Callable[[], None]) -> None:
        self.inner = inner
        self.pause = pause

    @contextlib.contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Any]:
        with self.inner.task(description, total) as task:
            yield _PausingTask(task, self.pause)


class _PausingTask:
    def __init__(self, inner: Any, pause: Callable[[], None]) -> None:
        self.inner = inner
        self.pause = pause

    def advance(self, amount: int = 1) -> None:
        self.inner.advance(amount)
        self.pause()


def pausing_runner(delays: dict[str, float]) -> Callable[[PhaseContext, Phase], PhaseOutcome]:
    """A ``phase_runner`` that pauses the named phases for their number of seconds."""

    def run(ctx: PhaseContext, phase: Phase) -> PhaseOutcome:
        seconds = delays.get(phase.name, 0.0)
        if seconds <= 0:
            return phase.run(ctx)
        paused: list[bool] = []

        def pause() -> None:
            if not paused:
                paused.append(True)
                ctx.event("test_phase_delay", phase=phase.name, seconds=seconds)
                time.sleep(seconds)

        original = ctx.progress
        ctx.progress = _PausingProgress(original, pause)
        try:
            outcome = phase.run(ctx)
        finally:
            ctx.progress = original
        pause()
        return outcome

    return run


def main(argv: list[str]) -> int:
    config, run_id, spec = argv
    try:
        output = api.pipeline_run(config, run_id=run_id, phase_runner=pausing_runner(parse_delays(spec)))
    except IndexFoundryError as error:  # as the CLI reports it: one line, the code's exit status
        print(error.one_line(), file=sys.stderr)
        return error.exit_code
    print(output.model_dump_json())
    return 0 if output.status != "failed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
