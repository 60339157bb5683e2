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
import math
import os
import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from indexfoundry.errors import IndexFoundryError, NotFound
from indexfoundry.models.records import DocumentChunk
from indexfoundry.storage.atomic import atomic_write_json, read_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.memo import Memo, memos_enabled
from indexfoundry.storage.workcache import WorkCache

if TYPE_CHECKING:
    from indexfoundry.backends.keyword.update import PreviousKeywords

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


# A text's keyword tokens, kept as one string: its stems joined by spaces (a stem is made of word
# characters only). Texts seen in this process (storage/memo.py; docs mode) and, in a pipeline
# run, in the runs folder's work cache by text hash: an edit tokenizes only the changed chunks.
_stems_memo: Memo[str] = Memo(50_000)


def stems_cache_kind() -> str:
    """What a text's tokens depend on besides the text: the token pattern, stopwords and stemmer."""
    from importlib.metadata import version

    return f"bm25-stems/bm25s-{version('bm25s')}/PyStemmer-{version('PyStemmer')}/{STOPWORDS}/{STEMMER_LANGUAGE}"


def _stems_now(texts: list[str]) -> list[list[str]] | None:
    """Each text's tokens (``tokenize``'s), in one pass: each text's words found once, each
    distinct word stemmed once. None if a stem could not be told apart once joined by spaces
    (empty, or holding white space): never seen, but the caller then tokenizes with bm25s."""
    found = [_WORD.findall(text.lower()) for text in texts]
    distinct = sorted({word for words in found for word in words} - _stopwords())
    stem_of = dict(zip(distinct, _stemmer().stemWords(distinct), strict=True))
    if any(not stem or len(stem.split()) != 1 or stem.strip() != stem for stem in stem_of.values()):
        return None
    return [[stem_of[w] for w in words if w in stem_of] for words in found]


def text_stems(
    texts: Sequence[str], hashes: list[str] | None = None, cache: WorkCache | None = None
) -> list[list[str]]:
    """Each text's keyword tokens (exactly ``tokenize``'s). Texts tokenized before are taken from
    this process's memo (docs mode) or, with ``cache`` and the texts' SHA-256 ``hashes``, from the
    runs folder's work cache; the others are tokenized now and kept."""
    memo = memos_enabled()
    keyed = cache is not None and hashes is not None
    if not memo and not keyed:
        every = list(texts)
        return _stems_now(every) or tokenize(every)
    joined: list[str | None] = [None] * len(texts)
    if memo:
        texts = every = list(texts)  # the memo is keyed by text: every text is read
        known = _stems_memo.get_many(every)
        joined = [known.get(text) for text in every]
    if cache is not None and hashes is not None:
        wanted = [hashes[i] for i, j in enumerate(joined) if j is None]
        stored = cache.get_many(stems_cache_kind(), wanted) if wanted else {}
        joined = [j if j is not None else stored.get(hashes[i]) for i, j in enumerate(joined)]
    todo = [i for i, j in enumerate(joined) if not isinstance(j, str)]
    out: list[list[str]] = [j.split() if isinstance(j, str) else [] for j in joined]
    if todo:
        fresh = _stems_now([texts[i] for i in todo])
        if fresh is None:
            return tokenize(list(texts))
        for i, stems in zip(todo, fresh, strict=True):
            out[i], joined[i] = stems, " ".join(stems)
        if cache is not None and hashes is not None:
            cache.put_many(stems_cache_kind(), {hashes[i]: joined[i] for i in todo})
    if memo:
        _stems_memo.put_many({text: j for text, j in zip(texts, joined, strict=True) if j is not None})
    return out


def corpus_arrays(tokens: list[list[str]]) -> tuple[dict[str, int], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The keyword index's vocabulary (every token and "", numbered in sorted order), every
    text's token ids one after the other (int64), and each text's number of tokens."""
    # Each distinct token -> a number in order of appearance (numbered and looked up in C: a
    # defaultdict whose factory counts), then renumbered in sorted order in numpy.
    numbers: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    number = numbers.__getitem__
    flat = array.array("q")
    for doc in tokens:
        flat.extend(map(number, doc))
    lengths = np.fromiter((len(doc) for doc in tokens), dtype=np.int64, count=len(tokens))
    vocab = {token: i for i, token in enumerate(sorted(set(numbers) | {""}))}
    renumber = np.fromiter((vocab[t] for t in numbers), dtype=np.int64, count=len(numbers))
    ids = renumber[np.frombuffer(flat, dtype=np.int64)] if flat else np.zeros(0, dtype=np.int64)
    return vocab, ids, lengths


def corpus_token_ids(texts: list[str]) -> tuple[dict[str, int], list[list[int]]]:
    """The keyword index's vocabulary and each text's token ids: exactly ``tokenize``'s tokens,
    found in one pass over the corpus (``text_stems``)."""
    vocab, ids, lengths = corpus_arrays(text_stems(texts))
    if not texts:
        return vocab, []
    return vocab, [part.tolist() for part in np.split(ids, np.cumsum(lengths)[:-1])]


def bm25_scores(ids: np.ndarray[Any, Any], lengths: np.ndarray[Any, Any], n_vocab: int) -> dict[str, Any]:
    """The score matrix bm25s builds with ``BM25_PARAMS`` (Lucene) from the texts' token ids (one
    after the other, ``lengths`` per text): the same arrays bit for bit (tested), computed in
    numpy for the whole corpus at once instead of text by text in Python."""
    tokens, docs, tf = csc_pairs(ids, lengths, n_vocab)
    return csc_scores(tokens, docs, tf, lengths, n_vocab)


def csc_pairs(
    ids: np.ndarray[Any, Any], lengths: np.ndarray[Any, Any], n_vocab: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each (token, text) pair of the corpus once, in the score matrix's order (by token, then
    by text), with the token's count in the text: (tokens, texts, counts), int64."""
    n_docs = max(1, len(lengths))
    doc_of = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    pairs, tf = np.unique(ids.astype(np.int64) * n_docs + doc_of, return_counts=True)
    return pairs // n_docs, pairs % n_docs, tf.astype(np.int64)


def csc_scores(
    tokens: np.ndarray[Any, Any],
    docs: np.ndarray[Any, Any],
    tf: np.ndarray[Any, Any],
    lengths: np.ndarray[Any, Any],
    n_vocab: int,
) -> dict[str, Any]:
    """bm25s' score matrix (CSC: a column per token) from ``csc_pairs``' pairs and each text's
    number of tokens. A term's idf is bm25s' own ``math.log`` formula, worked out once per
    distinct document frequency; the term-frequency component is bm25s' (_score_tfc_robertson),
    its float64 arithmetic term by term."""
    k1, b = float(BM25_PARAMS["k1"]), float(BM25_PARAMS["b"])
    n_docs = len(lengths)
    avg_doc_len = np.array(lengths).mean()
    df = np.bincount(tokens, minlength=n_vocab)
    distinct, at = np.unique(df, return_inverse=True)
    idf_of = [math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) if d else 0.0 for d in distinct.tolist()]
    idf = np.asarray(idf_of, dtype=np.float64)[at].astype(np.float32)
    tf32 = tf.astype(np.float32)
    tfc = tf32 / (k1 * ((1 - b) + b * lengths[docs] / avg_doc_len) + tf32)
    scores = (idf[tokens] * tfc).astype(np.float32)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return {"data": scores, "indices": docs.astype(np.int32), "indptr": indptr, "num_docs": n_docs}


def keyword_text(chunk: DocumentChunk) -> str:
    """What the keyword index sees for a chunk: the same text as the embedder."""
    return chunk.embedding_text()


def bm25_retriever(
    ordered: list[DocumentChunk], hashes: dict[str, str] | None = None, cache: WorkCache | None = None
) -> Any:
    """The BM25 retriever of ``ordered`` (non-empty, sorted by chunk id), indexed in memory.
    ``hashes`` (chunk id -> SHA-256 of its keyword text) and ``cache``: tokens of earlier runs."""
    texts = [keyword_text(c) for c in ordered]
    keys = [hashes[c.chunk_id] for c in ordered] if hashes is not None else None
    return texts_retriever(texts, keys, cache)


def texts_retriever(texts: Sequence[str], keys: list[str] | None = None, cache: WorkCache | None = None) -> Any:
    """The BM25 retriever of keyword texts (non-empty, in chunk id order). With ``keys`` (each
    text's SHA-256) and ``cache``, a text is read only when its tokens are not cached: ``texts``
    may make its items when read (the index phase's carried chunks)."""
    vocab, ids, lengths = corpus_arrays(text_stems(texts, keys, cache))
    return _retriever(vocab, bm25_scores(ids, lengths, len(vocab)))


def _retriever(vocab: dict[str, int], scores: dict[str, Any]) -> Any:
    """A bm25s retriever holding a score matrix built here."""
    import bm25s

    retriever = bm25s.BM25(**BM25_PARAMS)
    retriever.scores = scores
    retriever.vocab_dict = vocab
    retriever.unique_token_ids_set = set(vocab.values())
    retriever.nonoccurrence_array = None
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


def build_keyword_index(
    layout: RunLayout,
    chunks: list[DocumentChunk],
    hashes: dict[str, str] | None = None,
    cache: WorkCache | None = None,
) -> list[Path]:
    """Build and persist the BM25 index of ``chunks``; return its files, sorted. ``hashes``
    (chunk id -> SHA-256 of its keyword text) and ``cache`` (the runs folder's work cache): an
    unchanged chunk's tokens are not found again."""
    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    texts = [keyword_text(c) for c in ordered]
    keys = [hashes[c.chunk_id] for c in ordered] if hashes is not None else None
    return write_keyword_index(layout, [c.chunk_id for c in ordered], texts, keys, cache)


def write_keyword_index(
    layout: RunLayout,
    chunk_ids: list[str],
    texts: Sequence[str],
    keys: list[str] | None = None,
    cache: WorkCache | None = None,
    previous: PreviousKeywords | None = None,
) -> list[Path]:
    """Build and persist the BM25 index of keyword ``texts`` (``keyword_text``; ``chunk_ids``
    sorted, one per text); return its files, sorted. ``keys`` and ``cache`` as ``texts_retriever``.
    With ``previous`` (a rerun's previous index) and ``keys``, only the texts it does not hold
    are read and tokenized (``update.py``): the same files."""
    from indexfoundry.backends.keyword.update import TF_NAME, updated_pairs

    with _new_index_folder(layout) as tmp:
        if chunk_ids:
            pairs = updated_pairs(previous, chunk_ids, keys, texts, cache) if previous and keys else None
            if pairs is None:
                vocab, ids, lengths = corpus_arrays(text_stems(texts, keys, cache))
                tokens, docs, tf = csc_pairs(ids, lengths, len(vocab))
            else:
                vocab, tokens, docs, tf, lengths = pairs.vocab, pairs.tokens, pairs.docs, pairs.tf, pairs.lengths
            _retriever(vocab, csc_scores(tokens, docs, tf, lengths, len(vocab))).save(str(tmp), show_progress=False)
            np.save(tmp / TF_NAME, tf.astype(np.int32))
            for path in tmp.iterdir():
                with path.open("rb") as handle:
                    os.fsync(handle.fileno())
        atomic_write_json(
            tmp / layout.keyword_ids.name,
            {
                "schema_version": KEYWORD_SCHEMA_VERSION,
                "tokenizer": {"stopwords": STOPWORDS, "stemmer": STEMMER_LANGUAGE},
                "bm25": BM25_PARAMS,
                "chunk_ids": chunk_ids,
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
