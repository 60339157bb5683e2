"""Passage scoring that knows the page, measured offline on an answers file.

``cache`` reads a docs run once (with the run's model): every chunk's text, breadcrumb and
source, and for each question the semantic score of every chunk (the product's semantic leg
at full depth) and the product's BM25 score of every matching chunk. ``run`` then scores
variants of the keyword leg (built in memory with the product's tokenizer and BM25 parameters)
and of page-aware scoring, fused as the product fuses (RRF, k = 60, top 100 of each leg), by
hit@k / MRR@10 of the answer passage on the dev and test splits:

    nice -n 10 .venv/bin/python bench/passage_research.py cache \
        bench/data/mkdocs_answers.json --run-id RUN --runs-dir RUNS --out mk-cache.json
    .venv/bin/python bench/passage_research.py run mk-cache.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexfoundry import api
from indexfoundry.app.answers import DEPTH, KeyedQuestion, first_rank, read_answers, score_ranks, squash
from indexfoundry.backends.keyword.bm25 import BM25_PARAMS, _stemmer, corpus_token_ids, tokenize
from indexfoundry.models.answers import AnswerQuestion
from indexfoundry.retrieval.fusion import rrf_fuse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion_research import FUSERS, grid
from prf_research import FeedbackBm25

Scores = dict[str, float]
POOL = 100


def cache(args: argparse.Namespace) -> None:
    questions = read_answers(Path(args.answers))
    service = api.search_service(args.run_id, runs_dir=args.runs_dir)
    total = len(service.chunks)
    chunks = {
        cid: {
            "text": c.content.text,
            "uri": c.source.uri,
            "crumb": c.metadata.heading_path,
            "part": c.metadata.part,
            "title": c.metadata.title,
            "index": c.chunk_index,
        }
        for cid, c in service.chunks.items()
    }
    legs = {
        q.id: {
            "semantic": dict(service.semantic(q.question, total, [])),
            "keyword": dict(service.keyword(q.question, total, [])),
        }
        for q in questions
    }
    out = {"run_id": service.run_id, "chunks": chunks, "questions": [q.model_dump() for q in questions], "legs": legs}
    Path(args.out).write_text(json.dumps(out), encoding="utf-8")
    print(f"{len(questions)} questions, {total} chunks cached in {args.out}")


# ---------------------------------------------------------------- keyword variants
class Bm25:
    """BM25 over given texts, as the product builds it (same tokenizer, parameters)."""

    def __init__(self, ids: list[str], texts: list[str]) -> None:
        import bm25s
        from bm25s.tokenization import Tokenized

        self.ids = ids
        vocab, tok = corpus_token_ids(texts)
        self.retriever = bm25s.BM25(**BM25_PARAMS)
        self.retriever.index(Tokenized(ids=tok, vocab=vocab), show_progress=False)
        self.stemmer = _stemmer()

    def scores(self, query: str) -> Scores:
        tokens = tokenize([query], self.stemmer)[0]
        if not tokens:
            return {}
        raw = self.retriever.get_scores(tokens)
        return {self.ids[i]: float(raw[i]) for i in range(len(self.ids)) if raw[i] > 0}


def _path_words(uri: str) -> str:
    return re.sub(r"[-_/.]+", " ", re.sub(r"\.md$", "", uri.split("/", 1)[-1]))


def keyword_text(chunk: dict[str, Any], crumb_weight: int, path: bool) -> str:
    crumb = chunk["crumb"] or ""
    head = "\n".join([crumb] * crumb_weight)
    if path:
        head = _path_words(chunk["uri"]) + "\n" + head
    return f"{head}\n\n{chunk['text']}" if head.strip() else chunk["text"]


# ---------------------------------------------------------------- page-aware scores
def pages_of(chunks: dict[str, Any]) -> dict[str, list[str]]:
    pages: dict[str, list[str]] = defaultdict(list)
    for cid, c in chunks.items():
        pages[c["uri"]].append(cid)
    return pages


def page_boost(scores: Scores, chunks: dict[str, Any], page: Scores, beta: float) -> Scores:
    """Each chunk's score relative to the best chunk, plus beta × its page's score relative to the best page."""
    if not scores:
        return {}
    top = max(scores.values()) or 1.0
    ptop = max(page.values(), default=0.0) or 1.0
    return {cid: s / top + beta * page.get(chunks[cid]["uri"], 0.0) / ptop for cid, s in scores.items()}


def page_max(scores: Scores, chunks: dict[str, Any]) -> Scores:
    out: Scores = {}
    for cid, s in scores.items():
        uri = chunks[cid]["uri"]
        out[uri] = max(out.get(uri, float("-inf")), s)
    return out


def ranked(scores: Scores, depth: int = POOL) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:depth]


# ---------------------------------------------------------------- scoring
def evaluate(data: dict[str, Any], rank: Callable[[str, str], list[str]], split: str | None) -> dict[str, float]:
    chunks = data["chunks"]
    squashed = {cid: (squash(c["text"]), c["uri"]) for cid, c in chunks.items()}
    ranks: dict[str, int | None] = {}
    for row in data["questions"]:
        q = AnswerQuestion.model_validate(row)
        if split is None or q.split == split:
            ids = rank(q.id, q.question)[:DEPTH]
            ranks[q.id] = first_rank(ids, lambda cid: squashed[cid], KeyedQuestion(q), 1.0)
    return score_ranks(ranks)


def run(args: argparse.Namespace) -> None:
    data = json.loads(Path(args.cache).read_text(encoding="utf-8"))
    chunks = data["chunks"]
    ids = sorted(chunks)
    legs = data["legs"]
    pages = pages_of(chunks)
    page_ids = sorted(pages)
    # whole-page BM25 (every chunk of the page, in order)
    page_texts = [
        "\n\n".join(keyword_text(chunks[c], 1, False) for c in sorted(pages[u], key=lambda c: chunks[c]["index"]))
        for u in page_ids
    ]
    page_bm25 = Bm25(page_ids, page_texts)
    kw_variants = {
        "kw:product": None,
        "kw:crumb1(rebuilt)": Bm25(ids, [keyword_text(chunks[c], 1, False) for c in ids]),
        "kw:crumb2": Bm25(ids, [keyword_text(chunks[c], 2, False) for c in ids]),
        "kw:crumb3": Bm25(ids, [keyword_text(chunks[c], 3, False) for c in ids]),
        "kw:crumb1+path": Bm25(ids, [keyword_text(chunks[c], 1, True) for c in ids]),
        "kw:crumb2+path": Bm25(ids, [keyword_text(chunks[c], 2, True) for c in ids]),
    }
    memo: dict[tuple[str, str], Scores] = {}

    def kw(name: str, qid: str, text: str) -> Scores:
        key = (name, qid)
        if key not in memo:
            index = kw_variants[name]
            memo[key] = legs[qid]["keyword"] if index is None else index.scores(text)
        return memo[key]

    def hybrid(sem: Scores, key: Scores) -> list[str]:
        return [c for c, _ in rrf_fuse([ranked(sem), ranked(key)], 60)]

    variants: dict[str, Callable[[str, str], list[str]]] = {
        "semantic": lambda qid, t: [c for c, _ in ranked(legs[qid]["semantic"])],
    }
    for name in kw_variants:
        variants[name] = lambda qid, t, n=name: [c for c, _ in ranked(kw(n, qid, t))]
        variants[f"hybrid[{name}]"] = lambda qid, t, n=name: hybrid(legs[qid]["semantic"], kw(n, qid, t))
    for beta in (0.1, 0.2, 0.3, 0.5):
        variants[f"kw+pageBM25 b={beta}"] = lambda qid, t, b=beta: [
            c for c, _ in ranked(page_boost(kw("kw:product", qid, t), chunks, page_bm25.scores(t), b))
        ]
        variants[f"hybrid[kw+pageBM25 b={beta}]"] = lambda qid, t, b=beta: hybrid(
            legs[qid]["semantic"], page_boost(kw("kw:product", qid, t), chunks, page_bm25.scores(t), b)
        )
        variants[f"hybrid[sem+pagemax g={beta}]"] = lambda qid, t, b=beta: hybrid(
            page_boost(legs[qid]["semantic"], chunks, page_max(legs[qid]["semantic"], chunks), b),
            kw("kw:product", qid, t),
        )
        variants[f"hybrid[both page b={beta}]"] = lambda qid, t, b=beta: hybrid(
            page_boost(legs[qid]["semantic"], chunks, page_max(legs[qid]["semantic"], chunks), b),
            page_boost(kw("kw:product", qid, t), chunks, page_bm25.scores(t), b),
        )
    crumb_bm25 = Bm25(ids, [(chunks[c]["crumb"] or "") + " " + _path_words(chunks[c]["uri"]) for c in ids])

    def fielded(qid: str, text: str, w: float) -> Scores:
        base = kw("kw:product", qid, text)
        field = crumb_bm25.scores(text)
        top, ftop = max(base.values(), default=1.0), max(field.values(), default=1.0)
        return {c: base.get(c, 0.0) / top + w * field.get(c, 0.0) / ftop for c in base.keys() | field.keys()}

    for w in (0.1, 0.2, 0.3, 0.5):
        variants[f"kw+crumbfield w={w}"] = lambda qid, t, w=w: [c for c, _ in ranked(fielded(qid, t, w))]
        variants[f"hybrid[kw+crumbfield w={w}]"] = lambda qid, t, w=w: hybrid(legs[qid]["semantic"], fielded(qid, t, w))
    feedback = FeedbackBm25(ids, [keyword_text(chunks[c], 1, False) for c in ids])

    def prf(text: str, m: int, t: int, lam: float) -> Scores:
        raw = feedback.scores(text, m=m, t=t, lam=lam)
        return {ids[i]: float(raw[i]) for i in range(len(ids)) if raw[i] > 0}

    for m, t, lam in ((3, 5, 0.1), (3, 10, 0.2), (5, 10, 0.3), (3, 20, 0.5)):
        variants[f"kw+prf m={m} t={t} l={lam}"] = lambda qid, text, a=(m, t, lam): [c for c, _ in ranked(prf(text, *a))]
        variants[f"hybrid[kw+prf m={m} t={t} l={lam}]"] = lambda qid, text, a=(m, t, lam): hybrid(
            legs[qid]["semantic"], prf(text, *a)
        )
    for fname, params in grid("answers"):
        fuser = FUSERS[fname](**params)
        label = "fusion " + fname + " " + ",".join(f"{k}={v}" for k, v in params.items())
        variants[label] = lambda qid, t, f=fuser: [
            c for c, _ in f(t, ranked(legs[qid]["semantic"]), ranked(kw("kw:product", qid, t)))
        ]
    wanted = args.only.split(",") if args.only else None
    rows = []
    for name, rank in variants.items():
        if wanted and not any(w in name for w in wanted):
            continue
        test = evaluate(data, rank, "test") if args.test else dict.fromkeys(("hit@1", "hit@5", "mrr@10"), float("nan"))
        rows.append({"variant": name, "dev": evaluate(data, rank, "dev"), "test": test})
    if args.json:
        print(json.dumps(rows))
        return
    print(f"{'variant':<34} {'dev hit@1':>9} {'hit@5':>6} {'mrr':>6}   {'test hit@1':>10} {'hit@5':>6} {'mrr':>6}")
    for r in rows:
        d, t = r["dev"], r["test"]
        print(
            f"{r['variant']:<34} {d['hit@1']:>9.3f} {d['hit@5']:>6.3f} {d['mrr@10']:>6.3f}"
            f"   {t['hit@1']:>10.3f} {t['hit@5']:>6.3f} {t['mrr@10']:>6.3f}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cache")
    c.add_argument("answers")
    c.add_argument("--run-id", required=True)
    c.add_argument("--runs-dir", required=True, type=Path)
    c.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("cache")
    r.add_argument("--only", help="comma-separated substrings of the variants to run")
    r.add_argument("--json", action="store_true")
    r.add_argument("--test", action="store_true", help="also score the held-out test split (once per change)")
    args = parser.parse_args(argv)
    {"cache": cache, "run": run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
