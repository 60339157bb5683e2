"""Embedding providers (local, hash, OpenAI, Cohere, int8 ONNX) and the shared embedding cache."""
