"""One command of ``bench/compare_bench.py`` for LangChain or LlamaIndex, in its own process.

Runs with the peers' venv's interpreter (LangChain / LlamaIndex / sentence-transformers
installed there, never in the project venv; how to build it: ``bench/compare_bench.py``):

    PEERS/bin/python bench/compare_worker.py langchain index FOLDER STATE MODEL_DIR defaults
    PEERS/bin/python bench/compare_worker.py llamaindex query FOLDER STATE MODEL_DIR matched

``index`` indexes FOLDER's ``**/*.md`` into an embedded Chroma under STATE (LangChain:
``index()`` with a SQLRecordManager and ``cleanup="full"``; LlamaIndex: an IngestionPipeline
with a persisted docstore and ``UPSERTS_AND_DELETE``, documents read with
``filename_as_id=True``). The profile says how they chunk and batch:

- ``defaults``: what a user gets without choosing, each library's own defaults — LangChain's
  ``RecursiveCharacterTextSplitter()`` (4,000 characters, 200 overlap) and
  ``HuggingFaceEmbeddings`` (sentence-transformers' batch of 32); LlamaIndex's
  ``IngestionPipeline`` default transformations, ``SentenceSplitter()`` (1,024 tokens, 200
  overlap), and ``HuggingFaceEmbedding`` (batch of 10);
- ``matched``: chunks close to IndexFoundry's old 1,500-character default — LangChain 1,500
  characters with 150 overlap, LlamaIndex 384 tokens with 38 overlap, both embedding in
  batches of 32.

Both models cut every text at the model's 256-token window. ``query`` loads the store and the
model, answers the benchmark queries (top 10, semantic) and prints per-query latencies.
``count SOURCE`` prints how many chunks of one source file the store still holds. Output: one
JSON line on stdout (``index``: the chunks embedded).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

COLLECTION = "bench"
QUERIES = [
    "how do I change the theme",
    "configure the navigation",
    "deploy to GitHub pages",
    "write a plugin",
    "add a custom domain",
    "route parameters and path converters",
    "middleware order",
    "websocket endpoint",
    "snippets extension include files",
    "syntax highlighting of code blocks",
]


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.md") if p.is_file())


# ------------------------------------------------------------------ LangChain
PROFILES = ("defaults", "matched")


def _langchain(
    action: str, folder: Path, state: Path, model_dir: str, profile: str, extra: list[str]
) -> dict[str, Any]:
    from langchain_chroma import Chroma
    from langchain_classic.indexes import SQLRecordManager, index
    from langchain_core.documents import Document
    from langchain_huggingface import HuggingFaceEmbeddings
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    matched = profile == "matched"
    embeddings = HuggingFaceEmbeddings(model_name=model_dir, encode_kwargs={"batch_size": 32} if matched else {})
    store = Chroma(collection_name=COLLECTION, embedding_function=embeddings, persist_directory=str(state / "chroma"))
    if action == "query":
        return _query(lambda q: store.similarity_search(q, k=10))
    if action == "count":
        return {"chunks": len(store.get(where={"source": extra[0]})["ids"])}
    records = SQLRecordManager(f"chroma/{COLLECTION}", db_url=f"sqlite:///{state / 'records.sqlite'}")
    records.create_schema()
    splitter = (
        RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=150)
        if matched
        else RecursiveCharacterTextSplitter()
    )
    docs = [
        Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.relative_to(folder).as_posix()})
        for p in _files(folder)
    ]
    chunks = splitter.split_documents(docs)
    result = index(chunks, records, store, cleanup="full", source_id_key="source")
    return {"chunks": len(chunks), **{k: int(v) for k, v in result.items()}}


# ------------------------------------------------------------------ LlamaIndex
def _llamaindex(
    action: str, folder: Path, state: Path, model_dir: str, profile: str, extra: list[str]
) -> dict[str, Any]:
    import chromadb
    from llama_index.core import SimpleDirectoryReader, StorageContext, VectorStoreIndex
    from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.vector_stores.chroma import ChromaVectorStore

    matched = profile == "matched"
    embed = (
        HuggingFaceEmbedding(model_name=model_dir, embed_batch_size=32)
        if matched
        else HuggingFaceEmbedding(model_name=model_dir)
    )
    client = chromadb.PersistentClient(path=str(state / "chroma"))
    collection = client.get_or_create_collection(COLLECTION)
    vector_store = ChromaVectorStore(chroma_collection=collection)
    if action == "query":
        index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed)
        retriever = index.as_retriever(similarity_top_k=10)
        return _query(retriever.retrieve)
    if action == "count":
        rows = collection.get(include=["metadatas"])
        return {"chunks": sum(1 for m in rows["metadatas"] if str(m.get("file_path", "")).endswith(extra[0]))}
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=384, chunk_overlap=38) if matched else SentenceSplitter(), embed],
        vector_store=vector_store,
        docstore=SimpleDocumentStore(),
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE,
    )
    persist = state / "pipeline"
    if persist.is_dir():
        pipeline.load(str(persist))
    reader = SimpleDirectoryReader(str(folder), recursive=True, required_exts=[".md"], filename_as_id=True)
    nodes = pipeline.run(documents=reader.load_data())
    pipeline.persist(str(persist))
    _ = StorageContext  # imported for parity with the documented set-up
    return {"chunks": len(nodes)}


def _query(search: Any) -> dict[str, Any]:
    search(QUERIES[0])  # warm-up (model and store loaded)
    times = []
    for _ in range(3):
        for q in QUERIES:
            start = time.perf_counter()
            search(q)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"queries": len(times), "p50_ms": round(times[len(times) // 2], 2)}


def main() -> None:
    system, action, folder, state, model_dir, profile, *extra = sys.argv[1:]
    if profile not in PROFILES:
        raise SystemExit(f"unknown profile {profile!r}: use one of {', '.join(PROFILES)}")
    state_path = Path(state)
    state_path.mkdir(parents=True, exist_ok=True)
    run = _langchain if system == "langchain" else _llamaindex
    out = run(action, Path(folder), state_path, model_dir, profile, extra)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
