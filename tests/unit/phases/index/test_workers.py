"""The embedding worker function embeds on the device it was placed on."""

from __future__ import annotations

from indexfoundry.backends.embedding.devices import CPU
from indexfoundry.backends.embedding.hashing import HashEmbedder
from indexfoundry.phases.index.workers import EmbedBatch, EmbedOnWorker


def test_the_worker_function_embeds_on_the_device_it_was_placed_on():
    work = EmbedOnWorker(HashEmbedder(8))
    batch = EmbedBatch(1, 1, ["alpha beta", "gamma"])
    placed = work.placed(CPU)
    assert placed.device == CPU
    assert (placed(batch) == work(batch)).all()
