"""The tools (``indexfoundry_connect_url`` …) and their registry (``registry.py``)."""
