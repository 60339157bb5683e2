"""The HTTP surface: a FastAPI app over the search service (see ``app.create_app``)."""

from indexfoundry.surfaces.http.app import create_app, openapi_spec
from indexfoundry.surfaces.http.settings import HttpSettings

__all__ = ["HttpSettings", "create_app", "openapi_spec"]
