"""Window geometry for long chunks: other window sizes and overlaps, scored offline from product runs.

The index phase embeds a chunk longer than the model's 256-token window in windows
(``backends/embedding/windows.py``: a quarter overlap, a chunk scores at its best window). This
script measures what other geometries would give, from runs the product built. It only measures:
nothing in the product, its runs or its configuration is changed.

A geometry is ``windows.window_texts`` with the window ``W`` and the overlap (a share of a window,
its ``overlap`` argument) chosen, every other rule the product's:
``256/q`` (256, a quarter: the current geometry), ``256/0``, ``256/e`` (an eighth), ``192/e``,
``128/0``, ``128/e``, ``128/q``; and ``256h+128w`` (the chunk's own 256-token vector plus the
``128/0`` windows), ``256q+128w`` (every ``256/q`` vector plus the ``128/0`` windows).

- Vectors: the run's embedder; a chunk's own text longer than ``W`` goes through a copy of it
  whose tokenizer cuts at ``W`` instead of 256. Kept in ``--cache DIR`` (``vectors.sqlite``, keyed
  by truncation and text hash, tied to the run's model id), first looked up in the runs folder's
  embedding cache, embedded only when missing.
- Semantic leg: every vector scored exactly against the query vector, each chunk at its best
  vector. Keyword leg: the run's own BM25 (``SearchService.keyword``). Hybrid: the product's
  ``fuse`` with the run's profile (RRF k = 60) over the top 100 of each leg.
- Scoring: BEIR (SciFact) by the product's ``score_rankings`` (documents ranked by their best
  chunk; nDCG@10, recall@100, MRR@10); an answers file by ``first_rank`` / ``score_ranks`` over
  the first 10 chunks (hit@1, hit@5, MRR@10). Paired against the current geometry (or the
  current fusion): a sign-flip permutation test (10,000 draws) and a 95 % bootstrap interval of
  the mean per-query difference (nDCG@10, or 1/rank for answers).
- Tokens: what the model reads ([CLS]/[SEP] included, a chunk's own text cut at ``W``).

Tune on ``train`` / ``dev``; look at ``test`` once, for the chosen candidates. Embedding speed per
window size is not measured here (``bench/embed_bench.py --lengths`` times the embedder).

The product's runs (one runs folder, ``RUNS``; each command prints its run id):

    .venv/bin/indexfoundry eval ../shared/corpora/benchmark/scifact --split train --mode all \\
        --runs-dir RUNS --json                                                  # SCIFACT
    .venv/bin/indexfoundry eval --answers bench/data/mkdocs_answers.json \\
        ../shared/corpora/markdown/mkdocs-1.4.2/docs --split dev --mode all --runs-dir RUNS --json  # MKDOCS
    .venv/bin/indexfoundry pipeline run MD.json --runs-dir RUNS --json         # MARKDOWN
    # MD.json: {"connect": {"sources": [{"type": "folder", "path": "<../shared/corpora/markdown, absolute>",
    #   "glob": "**/*.md", "name": "markdown"}]}, "index": {"embedding_model": "local"}}

The tables (``PY="nice -n 10 .venv/bin/python bench/window_research.py"``; ``--json`` prints
JSON lines instead of markdown):

    # vectors and tokens per geometry and corpus, chunks longer than 128/192/256 (no model call)
    $PY stats --runs-dir RUNS --run-id SCIFACT MARKDOWN MKDOCS --labels SciFact markdown-96 "MkDocs docs mode"
    # SciFact nDCG@10 / MkDocs hit@k, semantic and hybrid, per geometry (add --check once:
    # geometry vs windows.py, store vs the run's vectors, a re-embedded sample)
    $PY windows beir --runs-dir RUNS --run-id SCIFACT --split train --cache CACHE
    $PY windows answers --runs-dir RUNS --run-id MKDOCS --split dev --cache CACHE
    $PY windows beir --runs-dir RUNS --run-id SCIFACT --split test --cache CACHE --geoms 256/q 192/e 128/0
    $PY windows answers --runs-dir RUNS --run-id MKDOCS --split test --cache CACHE --geoms 256/q 192/e 128/0
    # fusion on each geometry's semantic leg: RRF k, min-max and z-score α at pool 100, and the
    # two chosen settings paired against the current fusion (--grid: all 111 settings per geometry)
    $PY fusion beir --runs-dir RUNS --run-id SCIFACT --split train --cache CACHE
    $PY fusion answers --runs-dir RUNS --run-id MKDOCS --split dev --cache CACHE
    $PY fusion beir --runs-dir RUNS --run-id SCIFACT --split test --cache CACHE --geoms 256/q 256q+128w 128/e
    $PY fusion answers --runs-dir RUNS --run-id MKDOCS --split test --cache CACHE --geoms 256/q 256q+128w 128/e

A fusion setting is named ``GEOMETRY|method|k or alpha|semantic weight|pool``: ``rrf`` is the
product's ``rrf_fuse`` (a weight other than 1: ``w/(k + r_sem) + 1/(k + r_kw)``), ``minmax`` its
``weighted_fuse`` (``weighted_sum``), ``zscore`` α × z(cosine) + (1 − α) × z(BM25), a chunk missing
from a list at that list's lowest z; all with the product's tie-breaks. ``*`` in the fusion grid:
not below the current fusion (``256/q|rrf|60|1|100``) on this split, in nDCG@10 (BEIR) or in
each of hit@1, hit@5 and MRR@10 (answers).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sqlite3
import sys
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry import api
from indexfoundry.app.answers import DEPTH, KeyedQuestion, first_rank, read_answers, score_ranks, squash
from indexfoundry.app.eval import read_qrels, read_queries, score_rankings
from indexfoundry.backends.embedding.cache import EmbeddingCache
from indexfoundry.backends.embedding.onnx_fp32 import _packaged_model_dir
from indexfoundry.backends.embedding.windows import local_window_texts, window_id, window_texts
from indexfoundry.phases.index.embedding import decode_vector
from indexfoundry.retrieval.fusion import _sorted_fused, fuse, rrf_fuse, weighted_fuse
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import cache_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion_research import _zscore

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "corpora" / "benchmark" / "scifact"
ANSWERS = REPO / "bench" / "data" / "mkdocs_answers.json"
Ranked = list[tuple[str, float]]
Text = tuple[str, int, str]  # (chunk id, window number: 0 = the chunk's own vector, text)
Variant = tuple[str, str, float, float, int]  # (geometry, method, k or alpha, semantic weight, pool)

# name -> (window W, overlap fraction): q = a quarter, e = an eighth, 0 = none
OVERLAPS = {"q": 0.25, "e": 0.125, "0": 0.0}
GEOMETRIES = {g: (int(g[:3]), OVERLAPS[g[4]]) for g in ("256/q", "256/0", "256/e", "192/e", "128/0", "128/e", "128/q")}
COMBOS = ("256h+128w", "256q+128w")
BASELINE = "256/q"
POOL = 100  # candidates per leg that the product fuses
DEPTH_LEGS = 200  # legs kept for fusion pools up to 200
KS = (5, 10, 20, 30, 60)
WEIGHTS = (0.5, 0.67, 0.8, 1.25, 1.5, 2.0)
ALPHAS = tuple(round(0.30 + 0.05 * i, 2) for i in range(11))
POOLS = (50, 100, 200)
KEY_SETTINGS = [("RRF 60", "rrf", 60), ("RRF 20", "rrf", 20), ("RRF 10", "rrf", 10), ("RRF 5", "rrf", 5)]
KEY_SETTINGS += [(f"{n} {a}", m, a) for n, m in (("min-max", "minmax"), ("z", "zscore")) for a in (0.55, 0.6)]
CURRENT_FUSION = "256/q|rrf|60|1|100"
CHOSEN = ["256q+128w|zscore|0.6|1|200", "128/e|minmax|0.6|1|100"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- geometry (windows.py's, its overlap a parameter)
@cache
def tokenizer(limit: int | None) -> Any:
    """The model's tokenizer, untruncated (None) or cutting at ``limit`` tokens (special tokens included)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_packaged_model_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation() if limit is None else tok.enable_truncation(limit)
    return tok


@cache
def n_tokens(text: str) -> int:
    return len(tokenizer(None).encode(text).ids)


def head_window(name: str) -> int:
    """The token window a geometry's own chunk vectors read."""
    return GEOMETRIES[name][0] if name in GEOMETRIES else 256


def geometry_texts(chunks: list[tuple[str, str, str]], name: str) -> list[Text]:
    """Every vector of a geometry for (chunk id, embedded text, body) rows."""
    if name in COMBOS:
        current = geometry_texts(chunks, "256/q")
        base = [t for t in current if t[1] == 0] if name == "256h+128w" else current
        return base + [t for t in geometry_texts(chunks, "128/0") if t[1] > 0]
    size, frac = GEOMETRIES[name]
    tok = tokenizer(None)
    out: list[Text] = []
    for cid, embedded, body in chunks:
        out.append((cid, 0, embedded))
        out += [(cid, k, t) for k, t in enumerate(window_texts(embedded, body, size, tok, frac), start=1)]
    return out


def geometry_stats(texts: list[Text], window: int) -> dict[str, int]:
    return {
        "vectors": len(texts),
        "window_vectors": sum(1 for _, k, _ in texts if k > 0),
        "tokens": sum(min(n_tokens(t), window) for _, _, t in texts),  # windows fit; heads are cut at W
    }


# ---------------------------------------------------------------- vectors
class Store:
    """Vectors by (truncation, text hash) in ``folder/vectors.sqlite``, for one model."""

    def __init__(self, folder: Path, service: Any, runs_dir: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(folder / "vectors.sqlite"))
        self.db.execute("create table if not exists v (trunc int, h text, vec blob, primary key (trunc, h))")
        self.db.execute("create table if not exists meta (k text primary key, value text)")
        self.model_id: str = service.model_id
        row = self.db.execute("select value from meta where k = 'model'").fetchone()
        if row is None:
            self.db.execute("insert into meta values ('model', ?)", (self.model_id,))
            self.db.commit()
        elif row[0] != self.model_id:
            raise SystemExit(f"{folder} holds vectors of {row[0]}; the run was indexed with {self.model_id}")
        self.service = service
        self.product_cache = cache_dir(runs_dir) / "embeddings.sqlite"
        self.embedders: dict[int, Any] = {}

    def embedder(self, trunc: int) -> Any:
        """The run's embedder; for another truncation a copy whose tokenizer cuts there."""
        if trunc not in self.embedders:
            base = self.service.embedder
            if trunc != 256 and not hasattr(base, "_tokenizer"):
                raise SystemExit(f"{base.model_id}: other windows need the local ONNX embedder")
            self.embedders[trunc] = base if trunc == 256 else copy.copy(base)
            if trunc != 256:
                self.embedders[trunc]._tokenizer = tokenizer(trunc)
        return self.embedders[trunc]

    def get(self, keys: list[tuple[int, str]]) -> dict[tuple[int, str], np.ndarray[Any, Any]]:
        out = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            where = " or ".join(["(trunc=? and h=?)"] * len(part))
            for t, h, blob in self.db.execute(
                f"select trunc, h, vec from v where {where}", [x for k in part for x in k]
            ):
                out[(t, h)] = np.frombuffer(blob, dtype="<f4")
        return out

    def put(self, items: dict[tuple[int, str], np.ndarray[Any, Any]]) -> None:
        rows = [(t, h, np.asarray(v, dtype="<f4").tobytes()) for (t, h), v in items.items()]
        self.db.executemany("insert or replace into v values (?, ?, ?)", rows)
        self.db.commit()

    @staticmethod
    def key(text: str, window: int, head: bool) -> tuple[int, str]:
        """A text the model reads whole shares its vector across geometries (truncation 256)."""
        return (window if head and n_tokens(text) > window else 256, sha256_text(text))

    def vectors(self, texts: list[Text], window: int, batch: int = 64) -> np.ndarray[Any, Any]:
        """Vectors of (chunk id, number, text) rows, in their order; heads cut at ``window``."""
        keys = [self.key(t, window, k == 0) for _, k, t in texts]
        have = self.get(sorted(set(keys)))
        todo = {k: t for k, (_, _, t) in zip(keys, texts, strict=True) if k not in have}
        if todo and self.product_cache.is_file():  # the product's vectors of the same texts
            cache = EmbeddingCache(self.product_cache)
            try:
                found = cache.get_many(self.model_id, [h for t, h in todo if t == 256])
            finally:
                cache.close()
            seeded = {(256, h): v for h, v in found.items()}
            self.put(seeded)
            have.update(seeded)
            todo = {k: t for k, t in todo.items() if k not in seeded}
        if todo:
            log(f"  W={window}: {len(set(keys))} distinct vectors, {len(todo)} to embed")
        started = time.time()
        for trunc in sorted({t for t, _ in todo}):
            items = sorted(((k, t) for k, t in todo.items() if k[0] == trunc), key=lambda kt: len(kt[1]))
            for i in range(0, len(items), batch):
                part = items[i : i + batch]
                fresh = dict(zip([k for k, _ in part], self.embedder(trunc).embed([t for _, t in part]), strict=True))
                self.put(fresh)
                have.update(fresh)
                if (i // batch) % 20 == 0:
                    log(f"    truncation {trunc}: {i + len(part)}/{len(items)} embedded, {time.time() - started:.0f}s")
        return np.stack([have[k] for k in keys]).astype(np.float32)


# ---------------------------------------------------------------- questions and scoring
class Beir:
    """The judged queries of one split; a chunk ranking scored as documents (each at its best chunk)."""

    metrics, shown = ("ndcg@10", "recall@100", "mrr@10"), ("ndcg@10",)
    guarded, per_query, limit = ("ndcg@10",), "nDCG@10", POOL  # guarded: what a fusion must not lower

    def __init__(self, folder: Path, split: str, chunks: list[Any]) -> None:
        queries = read_queries(folder / "queries.jsonl")
        self.qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
        self.qids = [q for q in queries if q in self.qrels]
        self.texts = [queries[q] for q in self.qids]
        self.judged = sorted(q for q, docs in self.qrels.items() if any(rel > 0 for rel in docs.values()))
        source = {c.chunk_id: c.source for c in chunks}  # the id a judgement names (app.eval.document_key)
        self.doc_of = {cid: s.record_id if s.record_id is not None else s.uri for cid, s in source.items()}

    def score(self, rankings: list[Ranked], paired: bool = True) -> tuple[dict[str, float], np.ndarray[Any, Any]]:
        runs: dict[str, Ranked] = {}
        for qid, ranking in zip(self.qids, rankings, strict=True):
            docs: dict[str, float] = {}
            for cid, score in ranking:
                docs.setdefault(self.doc_of[cid], score)
            runs[qid] = list(docs.items())[:POOL]
        if not paired:
            return score_rankings(runs, self.qrels), np.zeros(0)
        import ir_measures
        from ir_measures import nDCG

        judgements = [ir_measures.Qrel(q, d, r) for q in self.judged for d, r in sorted(self.qrels[q].items())]
        run = [ir_measures.ScoredDoc(q, d, float(len(r) - i)) for q, r in runs.items() for i, (d, _) in enumerate(r)]
        got = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], judgements, run)}
        return score_rankings(runs, self.qrels), np.array([got.get(q, 0.0) for q in self.judged])


class Answers:
    """The questions of one split of an answers file; a chunk ranking scored by its answer's rank."""

    metrics = shown = guarded = ("hit@1", "hit@5", "mrr@10")
    per_query, limit = "1/rank (MRR@10)", DEPTH

    def __init__(self, path: Path, split: str, chunks: list[Any]) -> None:
        questions = read_answers(path, split)
        self.qids = [q.id for q in questions]
        self.texts = [q.question for q in questions]
        self.keyed = [KeyedQuestion(q) for q in questions]
        self.squashed = {c.chunk_id: (squash(c.content.text), c.source.uri) for c in chunks}

    def score(self, rankings: list[Ranked], paired: bool = True) -> tuple[dict[str, float], np.ndarray[Any, Any]]:
        ranks = {
            k.question.id: first_rank([c for c, _ in r][:DEPTH], self.squashed.__getitem__, k, 1.0)
            for k, r in zip(self.keyed, rankings, strict=True)
        }
        found = score_ranks(ranks)
        return {m: found[m] for m in self.metrics}, np.array([0.0 if r is None else 1.0 / r for r in ranks.values()])


def paired(base: np.ndarray[Any, Any], other: np.ndarray[Any, Any]) -> dict[str, Any]:
    """Mean per-query difference, its 95 % bootstrap interval, sign-flip permutation p, better / worse."""
    rng = np.random.default_rng(0)
    d = other - base
    observed = float(d.mean())
    flips = rng.choice([-1.0, 1.0], size=(10_000, len(d)))
    p = float((np.abs((flips * d).mean(1)) >= abs(observed) - 1e-12).mean())
    low, high = np.percentile(d[rng.integers(0, len(d), (5_000, len(d)))].mean(1), [2.5, 97.5])
    out = {"diff": round(observed, 4), "ci95": [round(low, 4), round(high, 4)], "p": round(p, 4)}
    return {**out, "better": int((d > 1e-9).sum()), "worse": int((d < -1e-9).sum())}


def paired_cell(c: dict[str, Any]) -> str:
    p = "p < 0.001" if c["p"] < 0.001 else f"p {c['p']:.3f}"
    return f"{c['diff']:+.4f} [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}], {p} ({c['better']} / {c['worse']})"


# ---------------------------------------------------------------- the legs of every question
class Legs:
    """The run's chunks, its BM25 leg and the exact semantic leg of any geometry, for one split."""

    def __init__(self, args: argparse.Namespace) -> None:
        data = Path(args.data) if args.data else SCIFACT if args.kind == "beir" else ANSWERS
        self.service = api.search_service(args.run_id, runs_dir=args.runs_dir)
        self.chunks = sorted(self.service.chunks.values(), key=lambda c: c.chunk_id)
        self.task = (Beir if args.kind == "beir" else Answers)(data, args.split, self.chunks)
        self.rows = [(c.chunk_id, c.embedding_text(), c.content.text) for c in self.chunks]
        self.ids = [c.chunk_id for c in self.chunks]
        self.position = {cid: i for i, cid in enumerate(self.ids)}
        self.store = Store(Path(args.cache), self.service, Path(args.runs_dir))
        self.queries = self.store.vectors([(f"q{i}", 0, q) for i, q in enumerate(self.task.texts)], 256)
        self.keyword = [self.service.keyword(q, DEPTH_LEGS, []) for q in self.task.texts]
        self.hybrid_config = self.service.profile.retrieval_config.hybrid_config
        log(f"{len(self.task.qids)} questions, {len(self.ids)} chunks, hybrid {self.hybrid_config}")

    def semantic(self, name: str, depth: int = DEPTH_LEGS) -> tuple[list[Ranked], dict[str, int]]:
        texts = geometry_texts(self.rows, name)
        vectors = self.store.vectors(texts, head_window(name))
        owner = np.array([self.position[c] for c, _, _ in texts])
        order = np.argsort(owner, kind="stable")
        starts = np.r_[0, np.flatnonzero(np.diff(owner[order])) + 1]
        best = np.maximum.reduceat((self.queries @ vectors.T)[:, order], starts, axis=1)  # chunk: best vector
        out = []
        for row in best:
            top = np.argsort(-row, kind="stable")[:depth]  # score, then chunk id (the product's order)
            out.append([(self.ids[i], float(row[i])) for i in top])
        return out, geometry_stats(texts, head_window(name))


def check(legs: Legs) -> None:
    """The 256/q geometry is windows.py's; the store holds the run's vectors and this model's."""
    split, tok = local_window_texts(256), tokenizer(None)
    bad = sum(split(e, b) != window_texts(e, b, 256, tok, 0.25) for _, e, b in legs.rows)
    texts = geometry_texts(legs.rows, BASELINE)
    log(f"check: 256/q windows differing from windows.py: {bad} of {len(legs.rows)} chunks")
    log(f"check: 256/q vectors {len(texts)}, the run's vector manifest {legs.service.vector_manifest.vectors}")
    lines = legs.service.layout.embeddings.read_text(encoding="utf-8").splitlines()
    run = {row["chunk_id"]: decode_vector(row["vector"]) for row in map(json.loads, filter(None, lines))}
    mine = legs.store.vectors(texts, 256)
    ids = [c if k == 0 else window_id(c, k) for c, k, _ in texts]
    diff = max(float(np.abs(run[i] - mine[j]).max()) for j, i in enumerate(ids))
    log(f"check: largest |difference| store vs the run's embeddings file: {diff:.1e}")
    heads = [t for t in geometry_texts(legs.rows, "128/0") if t[1] == 0 and n_tokens(t[2]) > 128]
    sample = random.Random(0).sample(texts, 8) + random.Random(0).sample(heads, min(8, len(heads)))
    stored = np.vstack([legs.store.vectors(sample[:8], 256), legs.store.vectors(sample[8:], 128)])
    parts = ((256, sample[:8]), (128, sample[8:]))
    fresh = np.vstack([legs.store.embedder(w).embed([t for _, _, t in part]) for w, part in parts])
    log(f"check: 16 texts re-embedded (8 heads cut at 128), largest |difference| {np.abs(stored - fresh).max():.1e}")


# ---------------------------------------------------------------- fusion settings
def variant_name(v: Variant) -> str:
    return "|".join([v[0], v[1], f"{v[2]:g}", f"{v[3]:g}", str(v[4])])


def parse_variant(text: str) -> Variant:
    geometry, method, param, weight, pool = text.split("|")
    if (geometry not in GEOMETRIES and geometry not in COMBOS) or method not in ("rrf", "minmax", "zscore"):
        raise SystemExit(f"not a fusion setting: {text} (GEOMETRY|rrf,minmax,zscore|k or alpha|weight|pool)")
    return (geometry, method, float(param), float(weight), int(pool))


def grid(geometries: list[str]) -> Iterator[Variant]:
    """Every setting of the study: RRF k x pool, weighted RRF at pool 100, min-max and z-score α x pool."""
    for g in geometries:
        for k in KS:
            yield from ((g, "rrf", k, 1.0, pool) for pool in POOLS)
            yield from ((g, "rrf", k, w, POOL) for w in WEIGHTS)
        for method in ("minmax", "zscore"):
            yield from ((g, method, a, 1.0, pool) for a in ALPHAS for pool in POOLS)


def fuse_variant(semantic: Ranked, keyword: Ranked, v: Variant, limit: int) -> Ranked:
    _, method, param, weight, pool = v
    s, k = semantic[:pool], keyword[:pool]
    if method == "minmax":
        return weighted_fuse(s, k, param, limit)
    if method == "rrf" and weight == 1.0:
        return rrf_fuse([s, k], int(param), limit)
    fused: dict[str, float] = {}
    if method == "rrf":
        for w, ranking in ((weight, s), (1.0, k)):
            for rank, (cid, _) in enumerate(ranking, start=1):
                fused[cid] = fused.get(cid, 0.0) + w / (param + rank)
    else:
        zs, zk = _zscore(s), _zscore(k)  # bench/fusion_research.py's normalisation
        low_s, low_k = min(zs.values(), default=0.0), min(zk.values(), default=0.0)
        fused = {c: param * zs.get(c, low_s) + (1 - param) * zk.get(c, low_k) for c in zs.keys() | zk.keys()}
    return _sorted_fused(fused, [s, k], limit)


# ---------------------------------------------------------------- commands
def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]) + "\n"


def emit(args: argparse.Namespace, records: list[dict[str, Any]], markdown: str) -> None:
    print("\n".join(json.dumps(r) for r in records) if args.json else markdown, flush=True)


def stats(args: argparse.Namespace) -> None:
    labels = args.labels or args.run_id
    names = [*GEOMETRIES, *COMBOS]
    records: list[dict[str, Any]] = []
    counts: dict[tuple[str, str], dict[str, int]] = {}
    over_rows = []
    for run_id, label in zip(args.run_id, labels, strict=True):
        service = api.search_service(run_id, runs_dir=args.runs_dir)
        rows = [(c.chunk_id, c.embedding_text(), c.content.text) for c in service.chunks.values()]
        over = {f"over_{n}": sum(n_tokens(e) > n for _, e, _ in rows) for n in (128, 192, 256)}
        record = {"corpus": label, "chunks": len(rows), **over, "product_vectors": service.vector_manifest.vectors}
        records.append(record)
        over_rows.append([label, *(f"{v:,}" for k, v in record.items() if k != "corpus")])
        for name in names:
            counts[(label, name)] = geometry_stats(geometry_texts(rows, name), head_window(name))
            records.append({"corpus": label, "geometry": name, **counts[(label, name)]})

    def cell(label: str, name: str, what: str) -> str:
        value, base = counts[(label, name)][what], counts[(label, BASELINE)][what]
        return f"{value:,} ({100 * (value - base) / base:+.0f} %)"

    pairs = [(label, what) for label in labels for what in ("vectors", "tokens")]
    body = [[n + (" (current)" if n == BASELINE else ""), *(cell(lb, n, w) for lb, w in pairs)] for n in names]
    over = ["corpus", "chunks", "over 128", "over 192", "over 256", "vectors in the run"]
    emit(args, records, table(["geometry", *(f"{lb} {w}" for lb, w in pairs)], body) + "\n" + table(over, over_rows))


def windows(args: argparse.Namespace) -> None:
    legs = Legs(args)
    task, modes = legs.task, ("semantic", "hybrid")
    if args.check:
        check(legs)
    keyword = task.score([k[:POOL] for k in legs.keyword], paired=False)[0]
    records: list[dict[str, Any]] = [{"split": args.split, "geometry": "-", "mode": "keyword", **keyword}]
    base: dict[str, np.ndarray[Any, Any]] = {}
    body, diffs = [], []
    for name in dict.fromkeys([BASELINE, *args.geoms]):
        semantic, counts = legs.semantic(name, POOL)
        hybrid = [
            fuse(s, k[:POOL], legs.hybrid_config, task.limit) for s, k in zip(semantic, legs.keyword, strict=True)
        ]
        row, diff = [name + (" (current)" if name == BASELINE else "")], [name]
        for mode, rankings in zip(modes, (semantic, hybrid), strict=True):
            metrics, per_query = task.score(rankings)
            records.append({"split": args.split, "geometry": name, "mode": mode, **metrics, **counts})
            if base.setdefault(mode, per_query) is not per_query:  # the current geometry comes first
                records[-1]["vs_current"] = paired(base[mode], per_query)
                diff.append(paired_cell(records[-1]["vs_current"]))
            row += [f"{metrics[x]:.4f}" for x in task.metrics]
        log(f"{name}: {row[1:]}")
        body.append([*row, f"{counts['vectors']:,}", f"{counts['tokens']:,}"])
        diffs += [diff] if name != BASELINE else []
    header = ["geometry", *(f"{m[:3]} {x}" for m in modes for x in task.metrics), "vectors", "tokens"]
    markdown = f"{args.kind} {args.split}, {len(task.qids)} questions\n\n" + table(header, body)
    markdown += "\nkeyword alone: " + ", ".join(f"{x} {keyword[x]:.4f}" for x in task.metrics) + "\n\n"
    emit(
        args, records, markdown + table([f"vs 256/q: Δ {task.per_query} [95 % CI], p (better / worse)", *modes], diffs)
    )


def fusion(args: argparse.Namespace) -> None:
    legs = Legs(args)
    task = legs.task
    chosen = [parse_variant(v) for v in [CURRENT_FUSION, *(args.variants if args.variants is not None else CHOSEN)]]
    geometries = list(dict.fromkeys([BASELINE, *args.geoms]))
    key = {(g, label): (g, m, float(p), 1.0, POOL) for g in geometries for label, m, p in KEY_SETTINGS}
    todo = list(dict.fromkeys([*chosen, *key.values(), *(grid(geometries) if args.grid else [])]))
    semantic = {g: legs.semantic(g)[0] for g in dict.fromkeys([*geometries, *(v[0] for v in chosen)])}
    results: dict[Variant | str, dict[str, float]] = {"keyword": task.score([k[:POOL] for k in legs.keyword], False)[0]}
    results.update({g: task.score([r[:POOL] for r in ranked], paired=False)[0] for g, ranked in semantic.items()})
    per_query: dict[Variant, np.ndarray[Any, Any]] = {}
    started = time.time()
    for i, v in enumerate(todo):
        fused = [fuse_variant(s, k, v, task.limit) for s, k in zip(semantic[v[0]], legs.keyword, strict=True)]
        results[v], per_query[v] = task.score(fused, paired=v in chosen)
        if i % 100 == 99:
            log(f"{i + 1}/{len(todo)} settings, {time.time() - started:.0f}s")
    versus = {v: paired(per_query[chosen[0]], per_query[v]) for v in chosen[1:]}

    def cell(v: Variant | str, star: bool = True) -> str:
        mark = star and all(results[v][m] >= results[chosen[0]][m] for m in task.guarded)
        return " / ".join(f"{results[v][x]:.4f}" for x in task.shown) + (" *" if mark else "")

    records = [{"split": args.split, "variant": f"{g}|semantic", **results[g]} for g in semantic]
    records.append({"split": args.split, "variant": "keyword", **results["keyword"]})
    records += [
        {"split": args.split, "variant": variant_name(v), **results[v], "vs_current": versus.get(v)} for v in todo
    ]
    shown = " / ".join(task.shown)
    markdown = f"{args.kind} {args.split} {shown}, pool {POOL} per leg (`*`: not below {CURRENT_FUSION})\n\n"
    header = ["geometry", "semantic", *(label for label, _, _ in KEY_SETTINGS)]
    body = [[g, cell(g, False), *(cell(key[(g, label)]) for label, _, _ in KEY_SETTINGS)] for g in geometries]
    markdown += table(header, body) + f"\nkeyword alone: {cell('keyword', False)}\n\n"
    rows = [[variant_name(v), *(f"{results[v][m]:.4f}" for m in task.metrics)] for v in chosen]
    rows = [[*row, paired_cell(versus[v]) if v in versus else "–"] for row, v in zip(rows, chosen, strict=True)]
    markdown += table(["setting", *task.metrics, f"Δ {task.per_query} vs current [95 % CI], p (better / worse)"], rows)
    if args.grid:
        markdown += "\n" + table(["setting", shown], [[variant_name(v), cell(v)] for v in todo if v not in chosen])
    emit(args, records, markdown)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("stats", help="vectors and tokens per geometry (no model call)")
    s.add_argument("--run-id", nargs="+", required=True, help="one or more runs")
    s.add_argument("--labels", nargs="+", help="a name per run (default: the run ids)")
    w = sub.add_parser("windows", help="semantic and hybrid quality per geometry")
    w.add_argument("--geoms", nargs="+", default=list(GEOMETRIES), choices=list(GEOMETRIES))
    w.add_argument("--check", action="store_true", help="geometry, store and model checks first")
    f = sub.add_parser("fusion", help="fusion settings on each geometry's semantic leg")
    f.add_argument("--geoms", nargs="+", default=[*GEOMETRIES, *COMBOS], choices=[*GEOMETRIES, *COMBOS])
    f.add_argument("--variants", nargs="*", help=f"settings paired against the current fusion (default: {CHOSEN})")
    f.add_argument("--grid", action="store_true", help="every setting of the study (111 per geometry)")
    for p in (w, f):
        p.add_argument("kind", choices=["beir", "answers"])
        p.add_argument("--data", help="BEIR folder or answers file (default: SciFact, or the MkDocs answers file)")
        p.add_argument("--run-id", required=True, help="the run the product built for this data")
        p.add_argument("--split", required=True, help="train/dev to tune; test once per chosen candidate")
        p.add_argument("--cache", required=True, help="folder for the harness's vectors (outside the repository)")
    for p in (s, w, f):
        p.add_argument("--runs-dir", required=True)
        p.add_argument("--json", action="store_true", help="JSON lines instead of markdown tables")
    args = parser.parse_args(argv)
    {"stats": stats, "windows": windows, "fusion": fusion}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
