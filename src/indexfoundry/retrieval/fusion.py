"""Hybrid fusion: one ranking from a semantic and a keyword candidate list.

By reciprocal rank fusion (``rrf``: each list adds ``1 / (rrf_k + rank)``) or by
``weighted_sum`` (``alpha`` × min-max normalised semantic score + (1 − ``alpha``) × min-max
normalised BM25 score), as the retrieval profile's ``hybrid_config`` says. Ties are broken the
same way by both (``_tie_breaks``), then by chunk id, so a fused ranking is deterministic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from indexfoundry.models.retrieval import HybridConfig

# (chunk id, score), best first.
Ranked = list[tuple[str, float]]


def _relative_of(ranking: Ranked) -> Callable[[float], float]:
    """A list's score as a share of its best score (min-max when the best is not positive)."""
    scores = [s for _, s in ranking]
    top = max(scores, default=0.0)
    if top > 0:
        return lambda s: max(s, 0.0) / top
    low = min(scores, default=0.0)
    if top == low:
        return lambda s: 1.0
    return lambda s: (s - low) / (top - low)


def _tie_breaks(rankings: list[Ranked], wanted: list[str]) -> dict[str, tuple[int, float]]:
    """Per chunk of ``wanted``: its best rank in any single list, and minus the sum of its scores
    relative to each list's best. Sorting fused ties by these puts first the chunk one mode
    ranked better, and at equal best ranks the one closer to the top of both lists (the clearer
    lead). A chunk in none of the lists (only in a list without weight) comes after the others."""
    best = dict.fromkeys(wanted, 1 << 30)
    strength = dict.fromkeys(wanted, 0.0)
    for ranking in rankings:
        relative = _relative_of(ranking)
        for rank, (cid, score) in enumerate(ranking, start=1):
            if cid in best:
                if rank < best[cid]:
                    best[cid] = rank
                strength[cid] += relative(score)
    return {cid: (best[cid], -round(strength[cid], 9)) for cid in wanted}


def _sorted_fused(fused: dict[str, float], rankings: list[Ranked], limit: int | None = None) -> Ranked:
    """Best fused score first; ties (compared at 1e-9) by ``_tie_breaks``, then by chunk id.

    With ``limit``, the first ``limit`` of that order (the whole order cut there), worked out
    only for the chunks that can reach it: those within 2e-9 of the ``limit``-th best score
    (rounding to 9 digits moves a score by at most 5e-10). Python's ``round`` is slow, and the
    tie-breaks are needed only for chunks whose rounded scores tie.
    """
    if limit is not None and limit < len(fused):
        if limit <= 0:
            return []
        floor = sorted(fused.values(), reverse=True)[limit - 1] - 2e-9
        wanted = [cid for cid, score in fused.items() if score >= floor]
    else:
        wanted = list(fused)
    rounded = {cid: round(fused[cid], 9) for cid in wanted}
    counts = Counter(rounded.values())
    ties = _tie_breaks(rankings, [cid for cid in wanted if counts[rounded[cid]] > 1])
    untied = (0, 0.0)  # compared only with chunks of other scores: never decides
    wanted.sort(key=lambda cid: (-rounded[cid], *ties.get(cid, untied), cid))
    return [(cid, fused[cid]) for cid in wanted[:limit]]


def rrf_fuse(rankings: list[Ranked], k: int, limit: int | None = None) -> Ranked:
    """Reciprocal rank fusion: each list adds ``1 / (k + rank)`` (rank from 1) to its chunks;
    the best ``limit`` (default: all)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (cid, _score) in enumerate(ranking, start=1):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (k + rank)
    return _sorted_fused(fused, rankings, limit)


def _min_max(ranking: Ranked) -> dict[str, float]:
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    low, high = min(scores), max(scores)
    if high == low:
        return {cid: 1.0 for cid, _ in ranking}
    return {cid: (s - low) / (high - low) for cid, s in ranking}


def weighted_fuse(semantic: Ranked, keyword: Ranked, alpha: float, limit: int | None = None) -> Ranked:
    """``alpha`` × normalised semantic score + (1 − ``alpha``) × normalised keyword score; the
    best ``limit`` (default: all).

    Each list's scores are min-max normalised over its own candidates; a chunk missing from a
    list gets 0 from it.
    """
    sem, kw = _min_max(semantic), _min_max(keyword)
    fused = {cid: alpha * sem.get(cid, 0.0) + (1 - alpha) * kw.get(cid, 0.0) for cid in sem.keys() | kw.keys()}
    # Only a list with weight can break a tie (alpha 1 orders exactly as semantic search).
    weighted = [ranking for ranking, weight in ((semantic, alpha), (keyword, 1 - alpha)) if weight > 0]
    return _sorted_fused(fused, weighted, limit)


def fuse(semantic: Ranked, keyword: Ranked, config: HybridConfig, limit: int | None = None) -> Ranked:
    """Fuse a semantic and a keyword ranking as the profile's hybrid config says; the best
    ``limit`` (default: all, the same order)."""
    if config.fusion_method == "weighted_sum":
        return weighted_fuse(semantic, keyword, config.alpha, limit)
    return rrf_fuse([semantic, keyword], config.rrf_k, limit)
