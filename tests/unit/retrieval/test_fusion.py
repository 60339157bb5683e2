"""Hybrid fusion: reciprocal rank fusion and alpha-weighted score fusion, checked by hand."""

from __future__ import annotations

import pytest

from indexfoundry.models.retrieval import HybridConfig
from indexfoundry.retrieval.fusion import fuse, rrf_fuse, weighted_fuse


def test_rrf_adds_one_over_k_plus_rank_from_each_list():
    semantic = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
    keyword = [("c", 12.0), ("a", 3.0)]
    fused = dict(rrf_fuse([semantic, keyword], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert [cid for cid, _ in rrf_fuse([semantic, keyword], k=60)] == ["a", "c", "b"]


def test_rrf_ignores_raw_scores_and_breaks_ties_by_chunk_id():
    fused = rrf_fuse([[("z", 100.0)], [("y", 0.001)]], k=60)
    assert fused == [("y", pytest.approx(1 / 61)), ("z", pytest.approx(1 / 61))]


def test_weighted_sum_min_max_normalises_each_list_and_weights_by_alpha():
    semantic = [("a", 0.9), ("b", 0.5), ("c", 0.1)]  # normalised: a 1, b 0.5, c 0
    keyword = [("c", 10.0), ("b", 5.0)]  # normalised: c 1, b 0
    fused = dict(weighted_fuse(semantic, keyword, alpha=0.7))
    assert fused["a"] == pytest.approx(0.7)
    assert fused["b"] == pytest.approx(0.35)
    assert fused["c"] == pytest.approx(0.3)


def test_alpha_one_is_pure_semantic_order_and_alpha_zero_pure_keyword_order():
    semantic = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    keyword = [("c", 10.0), ("b", 5.0), ("a", 1.0)]
    assert [cid for cid, _ in weighted_fuse(semantic, keyword, 1.0)] == ["a", "b", "c"]
    assert [cid for cid, _ in weighted_fuse(semantic, keyword, 0.0)] == ["c", "b", "a"]


def test_a_single_candidate_list_with_equal_scores_normalises_to_one():
    assert weighted_fuse([("a", 0.4)], [], 0.5) == [("a", pytest.approx(0.5))]


def test_fuse_follows_the_profiles_fusion_method():
    semantic = [("a", 0.9), ("b", 0.1)]
    keyword = [("b", 9.0)]
    assert fuse(semantic, keyword, HybridConfig(fusion_method="rrf", rrf_k=1))[0][0] == "b"  # 1/2 + 1/3 > 1/2
    assert fuse(semantic, keyword, HybridConfig(fusion_method="weighted_sum", alpha=0.9))[0][0] == "a"


def test_an_rrf_tie_goes_to_the_chunk_a_single_mode_ranked_better():
    # "x" is 1st in keyword only (1/61); "y" is 62nd in both lists (1/122 + 1/122): an exact tie.
    filler = [(f"f{i:03d}", 1.0 - i / 1000) for i in range(61)]
    semantic = [*filler, ("y", 0.1)]
    keyword = [("x", 9.0), *[(cid, 5.0 - i / 100) for i, (cid, _) in enumerate(filler[1:])], ("y", 0.1)]
    fused = dict(rrf_fuse([semantic, keyword], k=60))
    assert fused["x"] == pytest.approx(fused["y"])
    order = [cid for cid, _ in rrf_fuse([semantic, keyword], k=60)]
    assert order.index("x") < order.index("y")


def test_an_rrf_tie_of_two_first_places_goes_to_the_clearer_lead():
    # "LED blinks red": the exact match leads keyword by far and is a close second by meaning;
    # the other chunk leads by meaning by a hair and is a distant keyword second.
    semantic = [("other", 0.81), ("exact", 0.80), ("c", 0.2)]
    keyword = [("exact", 12.0), ("other", 2.0), ("c", 1.0)]
    ranked = rrf_fuse([semantic, keyword], k=60)
    assert ranked[0][1] == pytest.approx(ranked[1][1])
    assert [cid for cid, _ in ranked][:2] == ["exact", "other"]
    assert rrf_fuse([semantic, keyword], k=60) == ranked  # deterministic


def test_the_best_limit_is_the_whole_order_cut_there_for_both_methods() -> None:
    import random

    rng = random.Random(3)
    for _ in range(400):
        ids = [f"c{i:02d}" for i in range(rng.randint(0, 40))]

        def ranking(ids: list[str]) -> list[tuple[str, float]]:
            picked = rng.sample(ids, rng.randint(0, len(ids)))
            scores = sorted((rng.choice([0.5, 0.25, rng.random(), -rng.random()]) for _ in picked), reverse=True)
            return list(zip(picked, scores, strict=True))

        semantic, keyword = ranking(ids), ranking(ids)
        for config in (
            HybridConfig(fusion_method="rrf", rrf_k=60),
            HybridConfig(fusion_method="weighted_sum", alpha=0.6),
        ):
            whole = fuse(semantic, keyword, config)
            assert sorted(cid for cid, _ in whole) == sorted({c for c, _ in semantic + keyword})
            for limit in (0, 1, 5, 10, 100):
                assert fuse(semantic, keyword, config, limit) == whole[:limit]


def test_a_list_without_weight_never_breaks_the_fusion() -> None:
    # alpha 1: chunks only the keyword list has score 0 and come after every semantic hit.
    fused = weighted_fuse([("a", 0.9), ("b", 0.5)], [("c", 3.0), ("a", 1.0)], 1.0)
    assert [cid for cid, _ in fused] == ["a", "b", "c"]
    assert [cid for cid, _ in weighted_fuse([("a", 0.9)], [("c", 3.0), ("d", 2.0)], 0.0)] == ["c", "d", "a"]
