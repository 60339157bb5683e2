"""``api.open_run(...) -> Run``: one typed handle for reading a run (search, documents, pages, stats)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree


def test_a_run_handle_searches_and_reads_pages_sections_documents_and_stats(tmp_path: Path, runs_dir: Path):
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    with api.open_run("latest", runs_dir=runs_dir) as run:
        assert run.id == out.run_id
        assert run.manifest.status == "completed"
        assert run.config.index.embedding_model == "hash"
        assert run.status().status == "completed"
        hits = run.search("install the package with pip", top_k=2, mode="keyword").results
        assert hits and hits[0].source.uri.endswith("guide/install.md")
        doc = run.document(hits[0].doc_id)
        assert doc.uri == hits[0].source.uri
        page = run.page(hits[0].source.uri)
        assert "pip install sample" in page.text
        section = run.section(hits[0].source.uri, "Using pip")
        assert section.breadcrumb.endswith("Using pip")
        assert "virtual environment" in section.text
        assert run.stats().run_id == out.run_id


def test_a_latest_handle_follows_a_newer_run_on_refresh(tmp_path: Path, runs_dir: Path):
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    run = api.open_run(runs_dir=runs_dir)
    assert run.id == first.run_id
    assert run.refresh() is False
    second = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    assert run.refresh() is True
    assert run.id == second.run_id
    pinned = api.open_run(first.run_id, runs_dir=runs_dir)
    assert pinned.refresh() is False and pinned.id == first.run_id


def test_opening_latest_with_no_completed_run_is_run_not_found(runs_dir: Path):
    with pytest.raises(IndexFoundryError) as info:
        api.open_run("latest", runs_dir=runs_dir)
    assert info.value.code == "RUN_NOT_FOUND"


def test_closing_a_leased_handle_waits_for_the_last_lease(tmp_path: Path, runs_dir: Path):
    from indexfoundry.pipeline.inuse import runs_in_use

    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    run = api.open_run(out.run_id, runs_dir=runs_dir, in_use="serve")
    assert out.run_id in runs_in_use(runs_dir)
    with run.lease():
        run.close()  # a newer run was swapped in while a request still reads this one
        assert out.run_id in runs_in_use(runs_dir)
        assert run.search("install", top_k=1, mode="keyword").run_id == out.run_id
    assert out.run_id not in runs_in_use(runs_dir)


def test_a_pool_reopens_a_run_whose_manifest_changed_and_closes_the_least_recent(tmp_path: Path, runs_dir: Path):
    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir).run_id
    second = api.pipeline_run(folder_config(docs), runs_dir=runs_dir).run_id
    pool = api.RunPool(runs_dir, size=1)
    with pool.using(first) as a:
        assert a.id == first
    with pool.using("latest") as b:
        assert b.id == second
    with pool.using(first) as again:
        assert again is not a  # evicted by the second run, opened anew
    api.run_phase("serve", first, runs_dir=runs_dir, force=True)  # rewrites the run's manifest
    with pool.using(first) as rerun:
        assert rerun is not again
    pool.close()
