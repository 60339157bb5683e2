"""How a ``local`` model file's texts are grouped into ONNX Runtime runs, and the runs spread over cores.

A plan is part of what makes a file's vectors (the padded length changes the bits, not the
meaning), so each recipe has one plan and keeps it: a text's padded length depends on the text
alone, and texts share a run only with texts of the same padded length.

- fp32 (``FP32_PLAN``, as it always ran): lengths rounded up to a multiple of 16, batches of up
  to 4,096 tokens, one session with ``threads`` intra-op threads.
- the default int8 file (``FUSED_PLAN``): a text longer than 64 tokens runs alone at its own
  length (no padding); shorter ones are rounded up to a multiple of 16 and batched up to 1,024
  tokens. The runs go side by side on ``threads`` Python threads, each run single-threaded.
  Measured on 2 cores (``docs/benchmarks.md``): a 4,096-token batch's activations (the
  feed-forward alone 4,096 x 1,536 floats, 25 MB) do not fit the caches and cost more per token
  than one 256-token text at a time, and two single-threaded runs side by side beat one run on
  two threads (no synchronisation inside each of the model's ~200 small kernels). Only texts of
  a few dozen tokens gain from batching.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """Padding and grouping of texts into runs, and how runs use the cores."""

    bucket: int  # padded lengths are multiples of this ...
    exact_above: int | None  # ... except that texts longer than this run alone at their own length
    max_tokens: int  # batch x padded length of one run
    max_texts: int
    parallel: bool  # runs side by side on single-threaded sessions, else one multi-threaded session

    def padded_length(self, tokens: int) -> int:
        """The one padded length of a text of ``tokens`` tokens, whatever it is batched with."""
        if self.exact_above is not None and tokens > self.exact_above:
            return tokens
        return max(self.bucket, -(-tokens // self.bucket) * self.bucket)

    def runs(self, lengths: list[int]) -> list[tuple[int, list[int]]]:
        """(padded length, row numbers) of each run for texts of these token counts; the longest
        runs first, so that side-by-side runs finish together."""
        groups: dict[int, list[int]] = {}
        for row, tokens in enumerate(lengths):
            groups.setdefault(self.padded_length(tokens), []).append(row)
        out: list[tuple[int, list[int]]] = []
        for length in sorted(groups, reverse=True):
            rows = groups[length]
            alone = self.exact_above is not None and length > self.exact_above
            step = 1 if alone else max(1, min(self.max_texts, self.max_tokens // length))
            out.extend((length, rows[start : start + step]) for start in range(0, len(rows), step))
        return out


FP32_PLAN = Plan(bucket=16, exact_above=None, max_tokens=4096, max_texts=64, parallel=False)
FUSED_PLAN = Plan(bucket=16, exact_above=64, max_tokens=1024, max_texts=64, parallel=True)


def run_all(work: Callable[[tuple[int, list[int]]], None], runs: Iterable[tuple[int, list[int]]], workers: int) -> None:
    """``work`` on every run: in this thread, or on ``workers`` threads side by side (ONNX Runtime
    releases the GIL while a run computes); the first failure is raised."""
    items = list(runs)
    if workers <= 1 or len(items) <= 1:
        for item in items:
            work(item)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="onnx-embed") as pool:
        for _ in pool.map(work, items):
            pass
