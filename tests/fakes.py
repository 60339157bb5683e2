"""Test doubles: a deterministic embedder that records every text it is asked to embed."""

from __future__ import annotations

from indexfoundry.backends.embedding.providers import HashEmbedder, Vectors


class RecordingEmbedder(HashEmbedder):
    """The hash embedder, plus a record of every call, so a test can prove what was embedded."""

    def __init__(self, dimensions: int = 384) -> None:
        super().__init__(dimensions)
        self.calls: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]

    def embed(self, texts: list[str]) -> Vectors:
        self.calls.append(list(texts))
        return super().embed(texts)
