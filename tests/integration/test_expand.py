"""Context expansion: neighbours and whole sections, cut from the document, adjacent hits merged."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.models.retrieval import SearchRequest
from indexfoundry.retrieval.service import SearchService
from indexfoundry.surfaces.cli import app
from tests.conftest import folder_config, write_tree


def _para(topic: str, n: int) -> str:
    return f"The {topic} step {n} explains {topic} details number {n} for readers who need {topic} help."


INSTALL = "## Install\n\n" + "\n\n".join(_para("install", n) for n in range(6)) + "\n"
THEME = "## Theme\n\n" + "\n\n".join(_para("colour", n) for n in range(6)) + "\n"
GUIDE = "# Guide\n\n" + INSTALL + "\n" + THEME
DOCS: dict[str, str | bytes] = {"guide.md": GUIDE, "other.md": "# Other\n\nNothing about anything here at all.\n"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> SearchService:
    root = tmp_path_factory.mktemp("expand")
    docs = write_tree(root / "docs", DOCS)
    config = folder_config(
        docs, normalize={"chunk_strategy": "recursive", "max_chars": 200, "min_chars": 50, "overlap_chars": 60}
    )
    out = api.pipeline_run(config, runs_dir=root / "runs")
    assert out.status == "completed"
    return api.search_service(out.run_id, runs_dir=root / "runs")


def covering(service: SearchService, section: str) -> list[str]:
    """Ids of the guide's chunks that overlap ``section`` (a slice of GUIDE), in document order."""
    start = GUIDE.encode().index(section.encode())
    end = start + len(section.encode())
    chunks = [
        c
        for c in service.chunks.values()
        if c.source.uri.endswith("guide.md") and c.position.byte_start < end and c.position.byte_end > start
    ]
    return [c.chunk_id for c in sorted(chunks, key=lambda c: c.chunk_index)]


def test_section_expansion_returns_the_whole_section_once_without_the_overlaps_repeated(service: SearchService):
    install = covering(service, INSTALL)
    assert len(install) >= 3  # the section is split into overlapping chunks
    top = service.search(SearchRequest(query="install step 3", mode="keyword", top_k=1, expand="section")).results[0]
    assert top.expanded is not None and top.expanded.chunk_ids == install
    assert top.expanded.heading_path == "Guide > Install"
    # the section (and the hit's own start, here the page title above it), nothing of the next one
    assert top.text == GUIDE.encode()[top.expanded.byte_start : top.expanded.byte_end].decode()
    assert INSTALL.strip() in top.text and "colour" not in top.text
    assert top.text.count("step 2 explains") == 1  # overlapping chunks are not repeated


def test_neighbour_expansion_takes_the_chunks_before_and_after(service: SearchService):
    hit = service.search(SearchRequest(query="install step 3", mode="keyword", top_k=1)).results[0]
    order = sorted((c for c in service.chunks.values() if c.doc_id == hit.doc_id), key=lambda c: c.chunk_index)
    at = [c.chunk_id for c in order].index(hit.chunk_id)
    wide = service.search(SearchRequest(query="install step 3", mode="keyword", top_k=1, expand="neighbors"))
    info = wide.results[0].expanded
    assert info is not None and info.chunk_ids == [c.chunk_id for c in order[max(at - 1, 0) : at + 2]]
    assert hit.text in wide.results[0].text and len(wide.results[0].text) > len(hit.text)


def test_adjacent_hits_are_merged_into_the_better_ranked_result(service: SearchService):
    plain = service.search(SearchRequest(query="install", mode="keyword", top_k=3)).results
    wide = service.search(SearchRequest(query="install", mode="keyword", top_k=3, expand="section")).results
    assert [r.chunk_id for r in wide] == [r.chunk_id for r in plain]  # ranking unchanged
    first, *others = wide
    assert INSTALL.strip() in first.text and "colour" not in first.text
    for result in others:  # every other hit is in the same section: no text repeated
        assert result.expanded is not None and result.expanded.merged_into == first.chunk_id
        assert result.text == ""


def test_expanded_answers_page_within_a_budget_and_rejoin(service: SearchService):
    request = SearchRequest(query="step details", mode="semantic", top_k=12, expand="neighbors")
    whole = service.search(request).results
    seen, cursor = [], None
    while True:
        page = service.search(request.model_copy(update={"max_tokens": 400, "cursor": cursor}))
        assert page.tokens is not None and page.tokens <= 400
        seen.extend(page.results)
        cursor = page.next_cursor
        if cursor is None:
            break
    joined: dict[str, str] = {}
    for r in seen:
        joined[r.chunk_id] = joined.get(r.chunk_id, "") + r.text
    assert [r.chunk_id for r in whole] == list(dict.fromkeys(r.chunk_id for r in seen))
    assert all(joined[r.chunk_id] == r.text for r in whole)


def test_cli_search_expands_a_section(service: SearchService):
    runs = service.layout.root.parent
    args = ["search", "colour step 2", "--run-id", service.run_id, "--runs-dir", str(runs), "--mode", "keyword"]
    done = CliRunner().invoke(app, [*args, "--top-k", "1", "--expand", "section", "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)["results"][0]
    assert THEME.strip() in result["text"] and "install" not in result["text"]
    assert result["expanded"]["heading_path"] == "Guide > Theme"
