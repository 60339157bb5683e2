"""IndexFoundry: a deterministic five-phase pipeline from content sources to a searchable index."""

__version__ = "0.1.0"
