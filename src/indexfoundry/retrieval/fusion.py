"""Hybrid fusion: one ranking from a semantic and a keyword candidate list.

By reciprocal rank fusion (``rrf``: each list adds ``1 / (rrf_k + rank)``) or by
``weighted_sum`` (``alpha`` × min-max normalised semantic score + (1 − ``alpha``) × min-max
normalised BM25 score), as the retrieval profile's ``hybrid_config`` says. Ties are broken the
same way by both (``_tie_breaks``), then by chunk id, so a fused ranking is deterministic.
"""

from __future__ import annotations

from indexfoundry.models.retrieval import HybridConfig

# (chunk id, score), best first.
Ranked = list[tuple[str, float]]


def _relative(ranking: Ranked) -> dict[str, float]:
    """Each score as a share of the list's best score (min-max when the best is not positive)."""
    top = max((s for _, s in ranking), default=0.0)
    if top <= 0:
        return _min_max(ranking)
    return {cid: max(s, 0.0) / top for cid, s in ranking}


def _tie_breaks(rankings: list[Ranked]) -> dict[str, tuple[int, float]]:
    """Per chunk: its best rank in any single list, and minus the sum of its scores relative to
    each list's best. Sorting fused ties by these puts first the chunk one mode ranked better,
    and at equal best ranks the one closer to the top of both lists (the clearer lead)."""
    best: dict[str, int] = {}
    strength: dict[str, float] = {}
    for ranking in rankings:
        normalised = _relative(ranking)
        for rank, (cid, _score) in enumerate(ranking, start=1):
            best[cid] = min(best.get(cid, rank), rank)
            strength[cid] = strength.get(cid, 0.0) + normalised[cid]
    return {cid: (best[cid], -round(strength[cid], 9)) for cid in best}


def _sorted_fused(fused: dict[str, float], rankings: list[Ranked]) -> Ranked:
    """Best fused score first; ties (compared at 1e-9) by ``_tie_breaks``, then by chunk id."""
    ties = _tie_breaks(rankings)
    return sorted(fused.items(), key=lambda item: (-round(item[1], 9), *ties[item[0]], item[0]))


def rrf_fuse(rankings: list[Ranked], k: int) -> Ranked:
    """Reciprocal rank fusion: each list adds ``1 / (k + rank)`` (rank from 1) to its chunks."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (cid, _score) in enumerate(ranking, start=1):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (k + rank)
    return _sorted_fused(fused, rankings)


def _min_max(ranking: Ranked) -> dict[str, float]:
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    low, high = min(scores), max(scores)
    if high == low:
        return {cid: 1.0 for cid, _ in ranking}
    return {cid: (s - low) / (high - low) for cid, s in ranking}


def weighted_fuse(semantic: Ranked, keyword: Ranked, alpha: float) -> Ranked:
    """``alpha`` × normalised semantic score + (1 − ``alpha``) × normalised keyword score.

    Each list's scores are min-max normalised over its own candidates; a chunk missing from a
    list gets 0 from it.
    """
    sem, kw = _min_max(semantic), _min_max(keyword)
    fused = {cid: alpha * sem.get(cid, 0.0) + (1 - alpha) * kw.get(cid, 0.0) for cid in sem.keys() | kw.keys()}
    # Only a list with weight can break a tie (alpha 1 orders exactly as semantic search).
    weighted = [ranking for ranking, weight in ((semantic, alpha), (keyword, 1 - alpha)) if weight > 0]
    return _sorted_fused(fused, weighted)


def fuse(semantic: Ranked, keyword: Ranked, config: HybridConfig) -> Ranked:
    """Fuse a semantic and a keyword ranking as the profile's hybrid config says."""
    if config.fusion_method == "weighted_sum":
        return weighted_fuse(semantic, keyword, config.alpha)
    return rrf_fuse([semantic, keyword], config.rrf_k)
