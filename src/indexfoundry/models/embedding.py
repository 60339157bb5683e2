"""The embedding-model spec: what ``index.embedding_model`` (or a manifest's model id) names.

One parser, ``parse_embedding_model``, turns the string into a typed spec (a pydantic
discriminated union on ``provider``, one variant per entry of ``EMBEDDERS`` in
``models/embedders.py``); the embedders (``backends/embedding/``), the checks made before a run
(``pipeline/preflight.py``), the index tools and the CLI all read that spec instead of
splitting the string themselves.

Accepted: ``local`` | ``local-int8`` | ``hash`` | ``hash:<dims>`` |
``sentence-transformers:<name or path>`` | ``openai:<model>`` | ``cohere:<model>``. A model id
recorded in a manifest may carry ``;key=value`` details (``openai:m;dims=256``) and the local
model's pinned id (``local:…+onnx@<hash>``); both parse to the same spec.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.base import Strict
from indexfoundry.models.embedders import EMBEDDERS, PLAIN_MODELS
from indexfoundry.models.validation import did_you_mean

# The providers of 'provider:model' (each described by its entry in ``models/embedders.py``).
PROVIDERS: tuple[str, ...] = tuple(EMBEDDERS)
DEFAULT_HASH_DIMENSIONS = 384


class LocalModel(Strict):
    """The packaged all-MiniLM-L6-v2 (fp32); ``pinned`` is a manifest's exact model id."""

    provider: Literal["local"] = "local"
    pinned: str | None = Field(default=None, description="'local:…' model id of a run's vectors")


class LocalInt8Model(Strict):
    """The packaged model quantized to int8 (ONNX Runtime)."""

    provider: Literal["local-int8"] = "local-int8"
    pinned: str | None = Field(default=None, description="'local-int8:…' model id of a run's vectors")


class HashModel(Strict):
    """Deterministic hashing vectors (tests, offline demos); ``dimensions`` None: the config's or 384."""

    provider: Literal["hash"] = "hash"
    dimensions: int | None = Field(default=None, ge=1, description="Vector size")


class SentenceTransformersModel(Strict):
    """A sentence-transformers model by hub name or local folder."""

    provider: Literal["sentence-transformers"] = "sentence-transformers"
    model: str = Field(min_length=1, description="Model name or folder")


class OpenAIModel(Strict):
    """An OpenAI (or OpenAI-compatible, with ``index.base_url``) embedding model."""

    provider: Literal["openai"] = "openai"
    model: str = Field(min_length=1, description="Model name, e.g. text-embedding-3-small")


class CohereModel(Strict):
    """A Cohere embedding model."""

    provider: Literal["cohere"] = "cohere"
    model: str = Field(min_length=1, description="Model name, e.g. embed-english-v3.0")


EmbeddingModelSpec = Annotated[
    LocalModel | LocalInt8Model | HashModel | SentenceTransformersModel | OpenAIModel | CohereModel,
    Field(discriminator="provider"),
]
_ADAPTER: TypeAdapter[EmbeddingModelSpec] = TypeAdapter(EmbeddingModelSpec)

_SUGGESTION = (
    "Use 'local', 'local-int8', 'hash', or 'provider:model' (sentence-transformers:<name|path>, "
    "openai:<model>, cohere:<model>)"
)


def parse_embedding_model(text: str, what: str = "index.embedding_model") -> EmbeddingModelSpec:
    """The typed spec of an embedding-model string; CONFIG_INVALID (with did-you-mean) otherwise."""
    name = text.split(";", 1)[0].strip()
    provider, sep, model = name.partition(":")
    entry = EMBEDDERS.get(provider)
    if entry is not None and entry.naming == "plain":
        return _ADAPTER.validate_python({"provider": provider, "pinned": text if sep else None})
    if entry is not None and entry.naming == "dims":
        if not sep:
            return _ADAPTER.validate_python({"provider": provider})
        if not model.isdigit() or int(model) < 1:
            raise ConfigInvalid(
                f"{what} '{text}': use {provider} or {provider}:<dims>", suggestion=f"e.g. {provider}:384"
            )
        return _ADAPTER.validate_python({"provider": provider, "dimensions": int(model)})
    if not sep:
        raise ConfigInvalid(
            f"unknown {what} '{text}'{did_you_mean(provider, list(PLAIN_MODELS))}", suggestion=_SUGGESTION
        )
    if entry is None:
        raise ConfigInvalid(
            f"unknown embedding provider '{provider}' in {what} '{text}'{did_you_mean(provider, list(PROVIDERS))}",
            suggestion=_SUGGESTION,
        )
    if not model:
        raise ConfigInvalid(f"{what} '{text}' names no model after '{provider}:'", suggestion=_SUGGESTION)
    return _ADAPTER.validate_python({"provider": provider, "model": model})


def spec_string(spec: EmbeddingModelSpec) -> str:
    """The ``index.embedding_model`` string of a spec (``parse_embedding_model``'s inverse)."""
    if isinstance(spec, LocalModel | LocalInt8Model):
        return spec.pinned or spec.provider
    if isinstance(spec, HashModel):
        return f"hash:{spec.dimensions}" if spec.dimensions else "hash"
    return f"{spec.provider}:{spec.model}"
