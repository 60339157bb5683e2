"""One retrieval service (semantic, keyword, hybrid, filters) shared by every surface."""
