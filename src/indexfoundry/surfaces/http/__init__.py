"""The HTTP surface: a FastAPI app over the search service (``app.create_app``), its OpenAPI
document (``app.openapi_spec``), and the server processes that run it (``processes``).

``import indexfoundry.surfaces.http`` is light: the names below load FastAPI on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from indexfoundry.surfaces.http.app import create_app as create_app
    from indexfoundry.surfaces.http.app import openapi_spec as openapi_spec
    from indexfoundry.surfaces.http.settings import HttpSettings as HttpSettings

_EXPORTS: dict[str, str] = {
    "create_app": "indexfoundry.surfaces.http.app",
    "openapi_spec": "indexfoundry.surfaces.http.app",
    "HttpSettings": "indexfoundry.surfaces.http.settings",
}

__all__ = ["HttpSettings", "create_app", "openapi_spec"]

if not TYPE_CHECKING:  # (hidden from mypy, which checks the names through the imports above)

    def __getattr__(name: str) -> Any:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
