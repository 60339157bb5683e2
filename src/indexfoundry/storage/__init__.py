"""On-disk state: the run layout, canonical hashing and atomic file writes."""
