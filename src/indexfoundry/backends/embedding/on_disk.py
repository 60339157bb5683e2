"""Where a ``sentence-transformers:<name or path>`` model is on this machine, found without loading
it and without the network.

A model is never downloaded at run time, so a name that is not on disk can only fail. The check
is made before a run exists (preflight, ``config validate``): a folder path must be a folder; a hub
name must be in the Hugging Face cache sentence-transformers reads (``$SENTENCE_TRANSFORMERS_HOME``,
else the hub's cache, ``$HF_HUB_CACHE`` / ``$HF_HOME``), under the name sentence-transformers
would look for (a bare name such as ``all-mpnet-base-v2`` means ``sentence-transformers/<name>``).
"""

from __future__ import annotations

import os
from pathlib import Path

# The organisation sentence-transformers prefixes to a bare hub name.
DEFAULT_ORGANISATION = "sentence-transformers"
# A file every sentence-transformers (or plain transformers) model folder has.
MARKER_FILES = ("modules.json", "config.json")


def looks_like_path(model: str) -> bool:
    """Whether ``model`` names a folder rather than a hub repository."""
    return model.startswith((".", "/", "~")) or "\\" in model or model.count("/") > 1


def hub_names(model: str) -> list[str]:
    """The hub repositories sentence-transformers would try for ``model``, in its order."""
    if "/" in model:
        return [model]
    return [f"{DEFAULT_ORGANISATION}/{model}", model]


def cache_dir() -> str | None:
    """The cache folder sentence-transformers passes to the hub (None: the hub's default)."""
    return os.environ.get("SENTENCE_TRANSFORMERS_HOME") or None


def _cached(repo: str, folder: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    for marker in MARKER_FILES:
        try:
            found = try_to_load_from_cache(repo, marker, cache_dir=folder)
        except ValueError:  # not a valid repository name
            return False
        if isinstance(found, str):
            return True
    return False


def hub_cache_folder() -> str:
    """The folder a hub name is looked up in, for messages."""
    from huggingface_hub import constants

    return cache_dir() or str(constants.HF_HUB_CACHE)


def missing_model(model: str) -> str | None:
    """Why the sentence-transformers model ``model`` cannot be loaded offline here, or None."""
    path = Path(model).expanduser()
    if path.is_dir():
        return None
    if looks_like_path(model):
        what = "is not a folder" if path.exists() else "does not exist"
        return f"the model folder {model} {what}"
    folder = cache_dir()
    if any(_cached(repo, folder) for repo in hub_names(model)):
        return None
    return (
        f"the model '{hub_names(model)[0]}' is not on this machine (not a folder, and not in the "
        f"Hugging Face cache {hub_cache_folder()}); models are never downloaded at run time"
    )
