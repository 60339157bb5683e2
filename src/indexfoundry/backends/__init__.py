"""Backends shared by the index phase and retrieval: embedding providers, vector stores, keyword index, rerankers.

A backend imports only ``storage``, ``models`` and ``errors``; never a phase, the pipeline or a surface.
"""
