"""``cross-encoder:<local folder>``: a sentence-transformers ``CrossEncoder`` on the CPU, offline.

Batched and deterministic. Padding changes the arithmetic a model does (the shape of every
matrix product), so a pair scored in a batch of long texts could differ in its last bits from
the same pair scored alone. Here each pair is padded to the smallest length bucket that holds
it (32, 64, 128, ... tokens, capped at ``max_length``), pairs of one bucket run together in
batches of exactly ``batch_size`` rows (the last one filled with empty pairs), so every pair is
always computed in the same shape: its score is bit-identical whatever else is reranked with it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from indexfoundry.backends.embedding.local import _offline_env
from indexfoundry.errors import ConfigInvalid, RerankError

_BUCKETS: tuple[int, ...] = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
_load_lock = threading.Lock()
_models: dict[tuple[str, int], Any] = {}


def _bucket(length: int, max_length: int) -> int:
    for size in _BUCKETS:
        if size >= length:
            return min(size, max_length)
    return max_length


def load_cross_encoder(folder: Path, max_length: int) -> Any:
    """The CrossEncoder in ``folder``, loaded once per process with the hub switched off."""
    _offline_env()
    key = (str(folder), max_length)
    with _load_lock:
        if key not in _models:
            try:
                from sentence_transformers import CrossEncoder
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            except ImportError:
                raise ConfigInvalid(
                    "sentence-transformers is not installed",
                    suggestion="pip install torch==2.13.0 sentence-transformers (see README)",
                ) from None
            try:
                _models[key] = CrossEncoder(str(folder), device="cpu", local_files_only=True, max_length=max_length)
            except (OSError, ValueError, RuntimeError, KeyError) as exc:
                raise RerankError(
                    f"cannot load the cross-encoder in {folder} offline: {type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:200]}",
                    recoverable=False,
                    suggestion="Point reranker.model at a saved CrossEncoder folder (config.json, weights, tokenizer)",
                ) from None
        return _models[key]


class CrossEncoderReranker:
    """A local CrossEncoder folder; scores are the model's activation (sigmoid for one label)."""

    def __init__(self, folder: str, *, batch_size: int = 8, max_length: int = 256) -> None:
        path = Path(folder).expanduser()
        if not path.is_dir():
            raise ConfigInvalid(
                f"reranker folder {path} does not exist",
                suggestion="Use cross-encoder:<folder of a saved CrossEncoder>; nothing is downloaded at run time",
            )
        self.folder = path.resolve()
        self.batch_size = batch_size
        self.max_length = max_length
        self.model_id = f"cross-encoder:{self.folder}"
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = load_cross_encoder(self.folder, self.max_length)
        return self._model

    def _lengths(self, query: str, texts: list[str]) -> list[int]:
        tokenizer = self.model.tokenizer
        encoded = tokenizer([query] * len(texts), texts, truncation=True, max_length=self.max_length, padding=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        try:
            lengths = self._lengths(query, texts)
            groups: dict[int, list[int]] = {}
            for index, length in enumerate(lengths):
                groups.setdefault(_bucket(length, self.max_length), []).append(index)
            scores: list[float] = [0.0] * len(texts)
            for size, members in sorted(groups.items()):
                kwargs = {"text": {"padding": "max_length", "max_length": size, "truncation": True}}
                for start in range(0, len(members), self.batch_size):
                    rows = members[start : start + self.batch_size]
                    pairs = [(query, texts[i]) for i in rows]
                    pairs += [("", "")] * (self.batch_size - len(rows))
                    out = self.model.predict(
                        pairs, batch_size=self.batch_size, show_progress_bar=False, processing_kwargs=kwargs
                    )
                    for i, value in zip(rows, out, strict=False):
                        scores[i] = float(value if getattr(value, "ndim", 0) == 0 else value[-1])
            return scores
        except RerankError:
            raise
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            raise RerankError(
                f"cross-encoder {self.folder} failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
                suggestion="Check that the folder holds a sequence-classification CrossEncoder",
            ) from None
