"""The BM25 keyword index of a run (``indexed/bm25/``), built with bm25s.

Chroma has no BM25, so this index is what makes keyword and hybrid search real. It is built
from the same text the embedder sees (breadcrumb + chunk text), tokenized with English
stopwords and the Snowball English stemmer (PyStemmer).

Determinism: chunks are indexed in chunk-id order and the vocabulary is numbered in sorted
token order (bm25s numbers it in set order, which changes with ``PYTHONHASHSEED``), so two
builds over the same chunks write byte-identical files. The folder is replaced atomically:
the files are written to a temporary sibling folder that is then renamed into place.
"""

from __future__ import annotations

import array
import contextlib
import functools
import itertools
import os
import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from indexfoundry.errors import IndexFoundryError, NotFound
from indexfoundry.models.records import DocumentChunk
from indexfoundry.storage.atomic import atomic_write_json, read_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.memo import Memo, memos_enabled

KEYWORD_SCHEMA_VERSION = 1
STOPWORDS = "en"
STEMMER_LANGUAGE = "english"
# Lucene's BM25 variant with its usual parameters (what the BEIR BM25 baseline uses).
BM25_PARAMS: dict[str, Any] = {"method": "lucene", "k1": 1.2, "b": 0.75}


def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer(STEMMER_LANGUAGE)


def tokenize(texts: list[str], stemmer: Any | None = None) -> list[list[str]]:
    """Lowercased word tokens of each text, English stopwords removed, Snowball-stemmed."""
    import bm25s

    if not texts:
        return []
    known = _tokens.get_many(texts)
    todo = sorted({t for t in texts if t not in known})
    if todo:
        tokens = bm25s.tokenize(
            todo,
            stopwords=STOPWORDS,
            stemmer=stemmer or _stemmer(),
            return_ids=False,
            show_progress=False,
        )
        fresh = {text: list(t) for text, t in zip(todo, tokens, strict=True)}
        _tokens.put_many(fresh)
        known = {**known, **fresh}
    return [list(known[t]) for t in texts]


# Token lists of texts seen in this process (storage/memo.py; on in docs mode): a refresh after
# one edit tokenizes only the changed chunks. Each text is tokenized on its own by bm25s.
_tokens: Memo[list[str]] = Memo(50_000)


# bm25s.tokenize's default token pattern (what ``tokenize`` uses): two or more word characters.
_WORD = re.compile(r"(?u)\b\w\w+\b")


@functools.cache
def _stopwords() -> frozenset[str]:
    from bm25s.tokenization import _infer_stopwords

    return frozenset(_infer_stopwords(STOPWORDS))


def query_tokens(query: str, stemmer: Any) -> list[str]:
    """``tokenize([query])[0]`` for one search query, without bm25s' per-call set-up (its
    progress bars and vocabulary cost more than the query's few words): the words lowercased,
    stopwords dropped, then stemmed."""
    stop = _stopwords()
    words = [word for word in _WORD.findall(query.lower()) if word not in stop]
    return list(stemmer.stemWords(words)) if words else []


def corpus_token_ids(texts: list[str]) -> tuple[dict[str, int], list[list[int]]]:
    """The keyword index's vocabulary (every token of ``texts`` and "", numbered in sorted order)
    and each text's token ids: exactly ``tokenize``'s tokens. In one pass over the corpus: each
    text's words are found once, each distinct word is stemmed once, and words become token ids
    in numpy (``tokenize`` builds and copies a list of strings per text, then each is mapped).
    With memos on (docs mode), texts seen before are not tokenized again (``tokenize``)."""
    if memos_enabled():
        corpus = tokenize(texts)
        vocab = {token: i for i, token in enumerate(sorted({t for doc in corpus for t in doc} | {""}))}
        return vocab, [[vocab[t] for t in doc] for doc in corpus]
    # Each distinct lowercased word -> its number, in order of appearance; numbered and looked up
    # in C (a defaultdict whose factory counts) and kept as 8-byte ints, not a list of strings.
    words: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    number = words.__getitem__
    lengths: list[int] = []
    flat = array.array("q")
    for text in texts:
        found = _WORD.findall(text.lower())
        lengths.append(len(found))
        flat.extend(map(number, found))
    stop = _stopwords()
    kept = [w for w in words if w not in stop]
    stem_of = dict(zip(kept, _stemmer().stemWords(kept), strict=True))
    vocab = {token: i for i, token in enumerate(sorted(set(stem_of.values()) | {""}))}
    # word number -> token id, -1 for a stopword (dropped, as bm25s drops it before stemming)
    token_of = np.array([vocab[stem_of[w]] if w in stem_of else -1 for w in words], dtype=np.int64)
    mapped = token_of[np.frombuffer(flat, dtype=np.int64)] if flat else np.zeros(0, dtype=np.int64)
    kept_mask = mapped >= 0
    of_text = np.repeat(np.arange(len(texts)), np.asarray(lengths, dtype=np.int64))
    counts = np.bincount(of_text[kept_mask], minlength=len(texts))
    parts = np.split(mapped[kept_mask], np.cumsum(counts)[:-1])
    return vocab, [part.tolist() for part in parts]


def keyword_text(chunk: DocumentChunk) -> str:
    """What the keyword index sees for a chunk: the same text as the embedder."""
    return chunk.embedding_text()


def bm25_retriever(ordered: list[DocumentChunk]) -> Any:
    """The BM25 retriever of ``ordered`` (non-empty, sorted by chunk id), indexed in memory."""
    import bm25s
    from bm25s.tokenization import Tokenized

    vocab, ids = corpus_token_ids([keyword_text(c) for c in ordered])
    retriever = bm25s.BM25(**BM25_PARAMS)
    retriever.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)
    return retriever


@contextlib.contextmanager
def _new_index_folder(layout: RunLayout) -> Iterator[Path]:
    """A fresh folder to fill with a run's BM25 files; once the block ends without an error it
    replaces the run's keyword index folder whole (readers see the old files or the new ones)."""
    target = layout.keyword_index_dir
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".bm25-", dir=target.parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes 0700; the index folder gets normal permissions
    try:
        yield tmp
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=".bm25-old-", dir=target.parent))
            os.replace(target, old / "bm25")
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def build_keyword_index(layout: RunLayout, chunks: list[DocumentChunk]) -> list[Path]:
    """Build and persist the BM25 index of ``chunks``; return its files, sorted."""
    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    with _new_index_folder(layout) as tmp:
        if ordered:
            bm25_retriever(ordered).save(str(tmp), show_progress=False)
            for path in tmp.iterdir():
                with path.open("rb") as handle:
                    os.fsync(handle.fileno())
        atomic_write_json(
            tmp / layout.keyword_ids.name,
            {
                "schema_version": KEYWORD_SCHEMA_VERSION,
                "tokenizer": {"stopwords": STOPWORDS, "stemmer": STEMMER_LANGUAGE},
                "bm25": BM25_PARAMS,
                "chunk_ids": [c.chunk_id for c in ordered],
            },
        )
    return sorted(p for p in layout.keyword_index_dir.iterdir() if p.is_file())


def link_keyword_index(layout: RunLayout, source: RunLayout, recorded: dict[str, str]) -> list[Path] | None:
    """Take another run's BM25 index as this run's, by hard link (or copy): for a run whose index
    phase has the same fingerprint as ``source``'s (the same chunks, settings and libraries, so a
    rebuild would write the same bytes). ``recorded``: ``source``'s artifact hashes by relative
    path. None (nothing changed here) when a file is missing or no longer has its recorded hash."""
    from indexfoundry.storage.atomic import link_or_copy
    from indexfoundry.storage.filehashes import file_sha256_many

    prefix = source.keyword_index_dir.relative_to(source.root).as_posix() + "/"
    names = sorted(rel for rel in recorded if rel.startswith(prefix) and "/" not in rel[len(prefix) :])
    if f"{prefix}{layout.keyword_ids.name}" not in names:
        return None
    digests = file_sha256_many([source.root / rel for rel in names])
    if any(digest != recorded[rel] for rel, digest in zip(names, digests, strict=True)):
        return None
    try:
        with _new_index_folder(layout) as tmp:
            for rel in names:
                link_or_copy(source.root / rel, tmp / rel[len(prefix) :])
    except OSError:  # e.g. the source run removed meanwhile: the caller builds the index instead
        return None
    return sorted(p for p in layout.keyword_index_dir.iterdir() if p.is_file())


class KeywordHit(NamedTuple):
    """One BM25 match: chunk id and its BM25 score (always > 0)."""

    chunk_id: str
    score: float


class KeywordIndex:
    """A loaded BM25 index: ``search(query, k, mask)`` → best chunks first."""

    def __init__(self, chunk_ids: list[str], retriever: Any) -> None:
        self.chunk_ids = chunk_ids
        self.position = {cid: i for i, cid in enumerate(chunk_ids)}
        # Ties are ordered by chunk id. The index is built in chunk-id order, so that is the
        # position; an index in another order gets each position's rank by id.
        in_order = all(a < b for a, b in itertools.pairwise(chunk_ids))
        self._tie_rank = None if in_order else np.argsort(np.argsort(np.asarray(chunk_ids, dtype=object)))
        self._retriever = retriever
        self._stemmer = _stemmer()

    @classmethod
    def load(cls, layout: RunLayout) -> KeywordIndex:
        """Load the run's keyword index, or ``NOT_FOUND`` if the run has none."""
        import bm25s

        if not layout.keyword_ids.is_file():
            raise NotFound(
                f"run {layout.run_id} has no keyword index",
                suggestion=f"Rebuild it with 'indexfoundry index --run-id {layout.run_id} --force'",
            )
        meta = read_json(layout.keyword_ids)
        if int(meta.get("schema_version", 0)) > KEYWORD_SCHEMA_VERSION:
            raise IndexFoundryError(
                f"keyword index of run {layout.run_id} has schema_version {meta.get('schema_version')}, "
                f"newer than this IndexFoundry understands ({KEYWORD_SCHEMA_VERSION})",
                code="CONFIG_INVALID",
                suggestion="Upgrade IndexFoundry, or rebuild the index with 'indexfoundry index --force'",
            )
        chunk_ids = [str(c) for c in meta["chunk_ids"]]
        retriever = bm25s.BM25.load(str(layout.keyword_index_dir), show_progress=False) if chunk_ids else None
        return cls(chunk_ids, retriever)

    @classmethod
    def in_memory(cls, chunks: list[DocumentChunk]) -> KeywordIndex:
        """The keyword index of ``chunks`` without files (what a run still being built answers with)."""
        ordered = sorted(chunks, key=lambda c: c.chunk_id)
        return cls([c.chunk_id for c in ordered], bm25_retriever(ordered) if ordered else None)

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def search(self, query: str, k: int, mask: np.ndarray[Any, Any] | None = None) -> list[KeywordHit]:
        """Up to ``k`` chunks matching ``query``; with ``mask`` (1 keep, 0 drop per chunk) only kept ones."""
        if self._retriever is None or k <= 0:
            return []
        tokens = query_tokens(query, self._stemmer)
        if not tokens:
            return []
        # Scores of every chunk (sparse: only chunks holding a query term get one), then the
        # top k among the matching chunks only. bm25s' own retrieve runs np.argpartition over
        # all N scores, mostly zeros: at 100k chunks that selection, not the scoring, was 10x
        # the 10k time. Ties at the k-th score are all kept, then ordered by chunk id, so the
        # result never depends on a selection algorithm's tie order.
        scores = self._retriever.get_scores(tokens, weight_mask=None if mask is None else np.asarray(mask, np.float32))
        matching = np.flatnonzero(scores > 0)
        found = scores[matching]
        if matching.size > k:
            kth = np.partition(found, matching.size - k)[matching.size - k]
            top = found >= kth
            matching, found = matching[top], found[top]
        # Best score first, ties by chunk id (in numpy, not a Python sort of objects).
        ties = matching if self._tie_rank is None else self._tie_rank[matching]
        order = np.lexsort((ties, -found))[:k]
        ids = self.chunk_ids
        return list(map(KeywordHit, [ids[i] for i in matching[order].tolist()], found[order].tolist()))
