"""Use cases on top of the pipeline and retrieval: the tool catalogue, server processes, eval,
the docs-mode index (watch + rebuild) and the llms.txt export.
"""
