"""Progress bars fit an 80-column terminal: a long label is cut, the count stays on the line."""

from __future__ import annotations

import io

from rich.console import Console

from indexfoundry.surfaces.cli.output import RichProgress


def test_a_long_embed_label_is_cut_and_the_count_stays_within_80_columns():
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None, legacy_windows=False)
    progress = RichProgress(enabled=True, console=console).progress()
    task = progress.add_task("embed (local:all-MiniLM-L6-v2@53aa51172d14)", total=123_456)
    progress.update(task, completed=98_765)
    with console.capture() as captured:
        console.print(progress.make_tasks_table(progress.tasks))
    lines = [line for line in captured.get().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert len(lines[0]) <= 80 and "98765/123456" in lines[0]
    assert lines[0].startswith("embed (local:all-MiniLM")
