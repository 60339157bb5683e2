"""Use cases on top of the pipeline and retrieval: the design's tools, server processes, eval,
the docs-mode index (watch + rebuild) and the llms.txt export.
"""
