"""Every vector store gives the same answers: the same pipeline (hash embedder) indexed into
embedded Chroma, a Chroma server started here, Qdrant local mode, Milvus Lite and the local
numpy store returns the same top-10 ids for the same queries (or differs only where scores tie),
and the same filters select the same vectors."""

from __future__ import annotations

import gc
import shutil
import socket
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from indexfoundry import api
from indexfoundry.backends.embedding.hashing import HashEmbedder
from indexfoundry.models.config import PipelineConfig
from indexfoundry.phases.index import open_run_store
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_run_config
from tests.conftest import folder_config
from tests.waiting import wait_for

TOPICS = {
    "install": "Install the package with pip inside a virtual environment; Python 3.11 is required.",
    "theme": "Change the theme colours and fonts in the config file; dark and light themes exist.",
    "search": "Search the index by keyword or meaning; filters narrow results by source and page.",
    "deploy": "Deploy the server behind a proxy; set the port and the host name in the settings.",
    "backup": "Back up the runs folder regularly; restore it by copying the files back in place.",
    "plugins": "Plugins add new extractors; each plugin registers a content type and a parser.",
}


def _docs() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    for i, (name, sentence) in enumerate(sorted(TOPICS.items())):
        sections = "\n\n".join(
            f"## Part {j}\n\n{sentence} Section {j} of {name} covers case {i * 10 + j} in detail." for j in range(4)
        )
        files[f"{name}.md"] = f"# {name.title()}\n\n{sections}\n"
    return files


QUERIES = [
    "how do I install with pip",
    "theme colours",
    "server port proxy",
    "restore a backup of the runs folder",
    "plugin parser content type",
    "section case detail",
]


def _chroma_up(port: int, proc: subprocess.Popen[bytes]) -> bool:
    """The chroma server on ``port`` answers its heartbeat (one whose process exited never will)."""
    try:
        if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
            return True
    except httpx.TransportError:
        pass
    if proc.poll() is not None:
        pytest.fail("chroma server did not start")
    return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    chroma = shutil.which("chroma") or str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "chroma")
    if not Path(chroma).exists():
        pytest.skip("the chroma CLI is not installed")
    port = _free_port()
    proc = subprocess.Popen(
        [chroma, "run", "--path", str(tmp_path / "chroma-server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not wait_for(lambda: _chroma_up(port, proc), timeout=60, interval=0.1):
            pytest.fail("chroma server did not start")
        yield {"host": "127.0.0.1", "port": port}
    finally:
        from indexfoundry.backends.stores.chroma import close_http_clients

        close_http_clients()
        proc.terminate()
        proc.wait(timeout=30)
        # chromadb's HttpClient leaves pooled sockets to the garbage collector even after
        # close(); collect them here, with the server gone, instead of at interpreter exit.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


@pytest.fixture(autouse=True)
def _release_embedded_clients() -> Iterator[None]:
    yield
    from indexfoundry.backends.stores.milvus import close_lite_clients
    from indexfoundry.backends.stores.qdrant import close_local_clients

    close_local_clients()
    close_lite_clients()


def _index(tree, runs_dir: Path, vector_db: dict[str, Any]) -> str:
    docs = tree(_docs())
    config = folder_config(docs, index={"embedding_model": "hash", "vector_db": vector_db})
    out = api.pipeline_run(config, runs_dir=runs_dir)
    assert out.status == "completed", out
    return out.run_id


def _top10(run_id: str, runs_dir: Path) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        response = api.search(query, run_id, runs_dir=runs_dir, top_k=10, mode="semantic", embedder=HashEmbedder())
        out.append([(r.chunk_id, r.score) for r in response.results])
    return out


def _same_up_to_ties(reference: list[tuple[str, float]], other: list[tuple[str, float]]) -> None:
    assert len(reference) == len(other)
    ref_scores = dict(reference)
    for (ref_id, ref_score), (got_id, got_score) in zip(reference, other, strict=True):
        assert got_score == pytest.approx(ref_score, abs=1e-4)
        if got_id != ref_id:
            # Allowed only between equal scores: the other id must tie with this rank's score.
            tied = [cid for cid, score in ref_scores.items() if abs(score - ref_score) <= 1e-4]
            assert len(tied) > 1 or got_id not in ref_scores, (ref_id, got_id)


@pytest.mark.slow
def test_chroma_server_qdrant_milvus_lite_and_local_return_the_same_top10_as_embedded_chroma(
    tree, runs_dir: Path, chroma_server: dict[str, Any]
):
    reference = _top10(_index(tree, runs_dir, {"provider": "chroma"}), runs_dir)
    assert all(len(r) == 10 for r in reference)
    for vector_db in (
        {"provider": "chroma", "connection": chroma_server},
        {"provider": "qdrant"},
        {"provider": "milvus"},
        {"provider": "local"},
    ):
        got = _top10(_index(tree, runs_dir, vector_db), runs_dir)
        for ref, other in zip(reference, got, strict=True):
            _same_up_to_ties(ref, other)


FILTERS: list[dict[str, Any]] = [
    {"source.uri": {"$eq": "docs/theme.md"}},
    {"source.uri": {"$in": ["docs/theme.md", "docs/backup.md"]}},
    {"source.uri": {"$ne": "docs/theme.md"}},
    {"source.uri": {"$nin": ["docs/theme.md", "docs/install.md"]}},
    {"chunk_index": {"$gte": 2}},
    {"$and": [{"chunk_index": {"$lt": 2}}, {"source.type": {"$eq": "markdown"}}]},
    {"$or": [{"chunk_index": {"$eq": 0}}, {"source.uri": {"$eq": "docs/plugins.md"}}]},
]


@pytest.mark.parametrize("provider", ["qdrant", "milvus", "local"])
def test_filters_select_the_same_vectors_as_chroma(tree, runs_dir: Path, provider: str):
    ref_run = _index(tree, runs_dir, {"provider": "chroma"})
    run = _index(tree, runs_dir, {"provider": provider})
    vector = HashEmbedder().embed(["section case detail"])[0]

    def results(run_id: str, where: dict[str, Any]) -> list[str]:
        layout = RunLayout(runs_dir / run_id)
        config: PipelineConfig = load_run_config(layout)
        store = open_run_store(layout, config)
        try:
            return sorted(hit.id for hit in store.query(vector, 100, where))
        finally:
            store.close()

    for where in FILTERS:
        expected = results(ref_run, where)
        assert expected, where
        assert results(run, where) == expected, where
