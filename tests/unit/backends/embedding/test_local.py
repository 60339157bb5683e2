"""The embedders run on this machine: torch's thread count (no model)."""

from __future__ import annotations

import pytest

from indexfoundry.backends.embedding.local import configure_torch_threads


def test_torch_threads_follow_the_embed_thread_setting(monkeypatch: pytest.MonkeyPatch):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("INDEXFOUNDRY_EMBED_THREADS", "1")
        assert configure_torch_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.delenv("INDEXFOUNDRY_EMBED_THREADS")
        assert 1 <= configure_torch_threads() <= 4
    finally:
        torch.set_num_threads(before)
