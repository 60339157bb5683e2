"""``provider: pinecone`` end to end through the official client against the local emulator of
Pinecone's REST data plane (``tests/emulators/pinecone.py``; the live service is not reached):
a pipeline run serves the same top-10 as Chroma, ``index verify`` is clean, and the API key
never reaches the run's files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from indexfoundry.app.tools.index import verify_run
from tests.emulators.pinecone import PineconeEmulator
from tests.integration.test_index_stores import _index, _same_up_to_ties, _top10

pytest.importorskip("pinecone", reason="the pinecone client is not installed (extra 'pinecone')")


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[PineconeEmulator]:
    server = PineconeEmulator(384, api_key="pc-secret-canary")
    server.start()
    monkeypatch.setenv("PINECONE_API_KEY", "pc-secret-canary")
    try:
        yield server
    finally:
        server.stop()


def test_a_pinecone_run_serves_the_same_top10_as_chroma_and_verifies_clean(
    tree, runs_dir: Path, emulator: PineconeEmulator
):
    reference = _top10(_index(tree, runs_dir, {"provider": "chroma"}), runs_dir)
    vector_db = {"provider": "pinecone", "collection": "docs", "connection": {"host": emulator.host}}
    run_id = _index(tree, runs_dir, vector_db)
    for ref, got in zip(reference, _top10(run_id, runs_dir), strict=True):
        _same_up_to_ties(ref, got)
    assert verify_run(run_id, runs_dir).ok
    assert {"POST /vectors/upsert", "POST /query", "GET /vectors/fetch", "GET /vectors/list"} <= set(emulator.requests)
    written = "".join(p.read_text(errors="replace") for p in (runs_dir / run_id).rglob("*") if p.is_file())
    assert "pc-secret-canary" not in written
