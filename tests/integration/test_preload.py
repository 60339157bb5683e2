"""Slow imports ahead of the index phase (``pipeline/preload.py``): started on a background thread
when extract hands files to its workers, never when a rerun extracts nothing."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.phases.index.phase import IndexPhase
from indexfoundry.pipeline.preload import Preload
from tests.conftest import folder_config, write_tree
from tests.fakes import RecordingEmbedder

# A module that records, when imported, the thread that imported it.
_RECORDER = """
import threading
IMPORTED_BY = threading.current_thread().name
"""


@pytest.fixture
def recorder_modules(tmp_path: Path) -> Iterator[list[str]]:
    folder = tmp_path / "modules"
    names = ["preload_probe_first", "preload_probe_second"]
    for name in names:
        write_tree(folder, {f"{name}.py": _RECORDER})
    sys.path.insert(0, str(folder))
    try:
        yield names
    finally:
        sys.path.remove(str(folder))
        for name in names:
            sys.modules.pop(name, None)


def test_a_run_that_extracts_imports_the_index_phases_modules_on_the_preload_thread_and_an_unchanged_rerun_does_not(
    tmp_path: Path, runs_dir: Path, recorder_modules: list[str], monkeypatch: pytest.MonkeyPatch
):
    first, second = recorder_modules
    wanted = [first, "no_such_module_anywhere"]  # one that fails to import is left to the phase
    monkeypatch.setattr(IndexPhase, "prepare_ahead", lambda self, ctx: tuple(wanted))
    docs = write_tree(tmp_path / "docs", {f"doc{i}.md": f"# Doc {i}\n\nText of document {i}.\n" for i in range(3)})
    config = folder_config(docs)
    run = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert run.status == "completed"
    assert sys.modules[first].IMPORTED_BY == "indexfoundry-preload"

    wanted[:] = [second]
    rerun = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), run_id=run.run_id)
    assert rerun.phases["extract"].status == "skipped"
    assert second not in sys.modules  # nothing extracted, so nothing imported ahead


def test_preload_imports_in_order_once_and_only_what_is_not_imported_yet(recorder_modules: list[str]):
    first, second = recorder_modules
    preload = Preload()
    preload.start(["sys"])  # already imported: no thread
    assert not preload.started
    preload.start([first, "no_such_module_anywhere", second, first])
    preload.start(["json"])  # one thread per run: a second start does nothing
    preload.join()
    assert sys.modules[first].IMPORTED_BY == sys.modules[second].IMPORTED_BY == "indexfoundry-preload"


def test_preload_runs_loaders_on_its_thread_and_leaves_their_failures_to_the_phase():
    ran: list[str] = []

    def loader() -> None:
        import threading

        ran.append(threading.current_thread().name)

    def broken() -> None:
        raise RuntimeError("a model file not made yet")

    preload = Preload()
    preload.start([broken, "json", loader])
    preload.join()
    assert ran == ["indexfoundry-preload"]


def test_the_index_phase_loads_its_local_model_ahead_only_when_this_process_embeds(tmp_path: Path):
    import functools

    from indexfoundry.backends.embedding.providers import prepare_embedder
    from indexfoundry.models.config import GlobalConfig, PipelineConfig
    from indexfoundry.phases.base import PhaseContext
    from indexfoundry.storage.layout import RunLayout

    config = PipelineConfig.model_validate(folder_config(tmp_path))
    layout = RunLayout(tmp_path / "runs" / "01900000-0000-7000-8000-000000000000")
    ctx = PhaseContext(layout=layout, config=config, global_config=GlobalConfig())
    ahead = IndexPhase().prepare_ahead(ctx)
    assert "chromadb" in ahead and "bm25s" in ahead
    loaders = [item for item in ahead if isinstance(item, functools.partial)]
    assert [(f.func, f.args[0]) for f in loaders] == [(prepare_embedder, config.index.embedding_model)]
    ctx.embedder_override = RecordingEmbedder()
    assert not [item for item in IndexPhase().prepare_ahead(ctx) if callable(item)]


def test_the_normalize_phase_builds_the_language_detector_ahead_only_when_it_detects(tmp_path: Path):
    import threading

    from indexfoundry.models.config import GlobalConfig, PipelineConfig
    from indexfoundry.phases.base import PhaseContext
    from indexfoundry.phases.normalize import NormalizePhase, language
    from indexfoundry.storage.layout import RunLayout

    layout = RunLayout(tmp_path / "runs" / "01900000-0000-7000-8000-000000000000")
    on = PipelineConfig.model_validate(folder_config(tmp_path))
    assert NormalizePhase().prepare_ahead(PhaseContext(layout=layout, config=on, global_config=GlobalConfig())) == (
        language.prepare_detector,
    )
    off = PipelineConfig.model_validate(folder_config(tmp_path, normalize={"detect_language": False}))
    assert NormalizePhase().prepare_ahead(PhaseContext(layout=layout, config=off, global_config=GlobalConfig())) == ()

    # The preload thread and the phase may ask at once: one detector is built, both get it.
    language._built_detector.cache_clear()
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(language._detector())) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 3 and all(d is got[0] for d in got)
    assert language._detector().detect_language_of("The quick brown fox jumps over the lazy dog") is not None
