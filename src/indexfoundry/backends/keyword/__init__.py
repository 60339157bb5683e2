"""The BM25 keyword index (bm25s), built by the index phase and searched by retrieval."""
