"""A docs folder's first build as queries see it: its progress fanned out to listeners besides
the server's reporter, and nothing to search before its chunks are committed."""

from __future__ import annotations

from pathlib import Path

from indexfoundry.app.docs_build import FirstBuild
from indexfoundry.storage.layout import RunLayout


class _Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def task(self, description: str, total: int | None):
        from contextlib import contextmanager

        @contextmanager
        def opened():
            self.lines.append(f"start {description}")
            yield self
            self.lines.append(f"end {description}")

        return opened()

    def advance(self, amount: int = 1) -> None:
        self.lines.append(f"advance {amount}")


def test_progress_reaches_the_servers_reporter_and_every_listener_until_it_stops_listening(tmp_path: Path):
    inner = _Recorder()
    build = FirstBuild(RunLayout(tmp_path / "runs" / "run"), "docs", inner)
    heard: list[str] = []
    stop = build.listen(heard.append)
    with build.task("extract", total=2) as task:
        task.advance()
        stop()
        task.advance()
    assert heard == ["extract: started", "extract 1/2"]
    assert inner.lines == ["start extract", "advance 1", "advance 1", "end extract"]
    assert build.state == "extract: done"
    assert "The index of docs is still building" in build.note() and "extract: done" in build.note()


def test_a_build_that_ends_before_its_chunks_leaves_nothing_to_search(tmp_path: Path):
    build = FirstBuild(RunLayout(tmp_path / "runs" / "run"), "docs")
    assert build.partial() is None
    build.finish()
    assert build.wait_searchable() is None
