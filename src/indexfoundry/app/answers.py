"""Answer-level evaluation: is the passage that answers a question in the first results?

An answers file (``indexfoundry.models.answers.AnswersFile``) keys each question to a short
passage copied from the document that answers it. Each question is searched in each mode and
the first ``DEPTH`` chunks are read in rank order:

- a chunk **holds** the passage when, with runs of whitespace counted as one space, the
  passage is inside the chunk's text and the chunk comes from the question's ``file`` (its
  source uri is that path, or ends with ``/`` + that path; no ``file``: any document);
- a passage cut by a chunk boundary is held by neither chunk unless ``min_overlap`` is below 1:
  then a chunk that ends with the passage's first part, or starts with its last part, holds it
  when that part is at least ``min_overlap`` of the passage's characters;
- the question's rank is the rank of the first chunk that holds it (none in the first
  ``DEPTH``: not found).

Metrics per mode, averaged over the questions: ``hit@k`` (share found at rank ≤ k, k = 1, 3,
5, 10) and ``mrr@10`` (mean of 1 / rank, 0 when not found). A question whose passage no chunk of
the run holds (mistyped, or cut by chunking) can never be found: it is counted as a miss and
listed under ``unreachable``, so a bad key is seen instead of silently lowering the figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from indexfoundry.errors import ConfigInvalid, NotFound, RerankError
from indexfoundry.models.answers import ANSWERS_SCHEMA_VERSION, AnswerQuestion, AnswersFile
from indexfoundry.models.retrieval import SearchMode

if TYPE_CHECKING:
    from indexfoundry.retrieval.service import SearchService

ANSWER_METRICS: tuple[str, ...] = ("hit@1", "hit@3", "hit@5", "hit@10", "mrr@10")
# Chunks read per question (hit@10 and mrr@10 need 10).
DEPTH = 10
_SPACES = re.compile(r"\s+")


def squash(text: str) -> str:
    """``text`` with every run of whitespace as one space, stripped (how passages are compared)."""
    return _SPACES.sub(" ", text).strip()


# ---------------------------------------------------------------- the file
def read_answers(path: Path, split: str | None = None) -> list[AnswerQuestion]:
    """The questions of an answers file, only those of ``split`` when given (``dev``, ``test``)."""
    if not path.is_file():
        raise NotFound(f"answers file {path} does not exist", suggestion="Check the path")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigInvalid(f"{path} is not a JSON answers file: {exc}", suggestion="Fix the file") from None
    if isinstance(data, dict) and int(data.get("schema_version", 1)) > ANSWERS_SCHEMA_VERSION:
        raise ConfigInvalid(
            f"{path} has schema_version {data['schema_version']}, newer than this IndexFoundry reads "
            f"({ANSWERS_SCHEMA_VERSION})",
            suggestion="Upgrade IndexFoundry",
        )
    try:
        answers = AnswersFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigInvalid(
            f"{path}: {where}: {first['msg']}",
            suggestion='Each question needs "id", "question" and "passage" (and usually "file")',
        ) from None
    seen: set[str] = set()
    for q in answers.questions:
        if q.id in seen:
            raise ConfigInvalid(
                f"{path}: question id '{q.id}' appears twice", suggestion="Give each question its own id"
            )
        seen.add(q.id)
    chosen = [q for q in answers.questions if split is None or q.split == split]
    if not chosen:
        raise ConfigInvalid(f"{path} has no question in split '{split}'", suggestion="Use --split dev, test or all")
    return chosen


# ---------------------------------------------------------------- matching
def file_matches(uri: str, file: str | None) -> bool:
    """True if a chunk of source ``uri`` may answer a question keyed to ``file``."""
    if file is None:
        return True
    file = file.lstrip("/")
    return uri == file or uri.endswith("/" + file)


def coverage(chunk_text: str, passage: str) -> float:
    """Share of ``passage`` a chunk holds: 1.0 when wholly inside, else the longest first or last
    part of it that a chunk boundary left in the chunk (both already squashed), else 0.0."""
    if passage in chunk_text:
        return 1.0
    best = 0
    for n in range(len(passage) - 1, 0, -1):
        if chunk_text.endswith(passage[:n]) or chunk_text.startswith(passage[-n:]):
            best = n
            break
    return best / len(passage)


@dataclass
class KeyedQuestion:
    """A question ready for matching: squashed passage, and its file."""

    question: AnswerQuestion
    passage: str = field(init=False)

    def __post_init__(self) -> None:
        self.passage = squash(self.question.passage)


def holds(text: str, uri: str, keyed: KeyedQuestion, min_overlap: float) -> bool:
    """True if a chunk (squashed ``text``, source ``uri``) holds the question's passage."""
    if not file_matches(uri, keyed.question.file):
        return False
    if min_overlap >= 1:
        return keyed.passage in text
    return coverage(text, keyed.passage) >= min_overlap


def first_rank(
    chunk_ids: Iterable[str], text_of: Callable[[str], tuple[str, str]], keyed: KeyedQuestion, min_overlap: float
) -> int | None:
    """Rank (from 1) of the first chunk that holds the passage, or None. ``text_of(chunk_id)`` →
    (squashed text, source uri)."""
    for rank, cid in enumerate(chunk_ids, start=1):
        text, uri = text_of(cid)
        if holds(text, uri, keyed, min_overlap):
            return rank
    return None


def score_ranks(ranks: dict[str, int | None]) -> dict[str, float]:
    """hit@1/3/5/10 and MRR@10 of per-question ranks (None = not found in the first 10)."""
    n = len(ranks)
    if n == 0:
        return dict.fromkeys(ANSWER_METRICS, 0.0)
    found = [r for r in ranks.values() if r is not None and r <= DEPTH]
    out = {f"hit@{k}": round(sum(1 for r in found if r <= k) / n, 4) for k in (1, 3, 5, 10)}
    out["mrr@10"] = round(sum(1.0 / r for r in found) / n, 4)
    return out


# ---------------------------------------------------------------- evaluating a run
@dataclass
class AnswersResult:
    """Metrics per mode (and per kind), each question's rank, and the questions no chunk holds."""

    run_id: str
    questions: int
    min_overlap: float
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    by_kind: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    ranks: dict[str, dict[str, int | None]] = field(default_factory=dict)
    unreachable: list[str] = field(default_factory=list)
    reranker: str | None = None
    split: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "questions": self.questions,
            "split": self.split or "all",
            "min_overlap": self.min_overlap,
            "metrics": self.metrics,
            "by_kind": self.by_kind,
            "unreachable": self.unreachable,
            "ranks": self.ranks,
        }
        if self.reranker is not None:
            out["reranker"] = self.reranker
        return out


class _Texts:
    """Squashed chunk texts and uris of a run, computed once per chunk."""

    def __init__(self, service: SearchService) -> None:
        self.service = service
        self._cache: dict[str, tuple[str, str]] = {}

    def __call__(self, chunk_id: str) -> tuple[str, str]:
        found = self._cache.get(chunk_id)
        if found is None:
            chunk = self.service.chunk(chunk_id)
            found = self._cache[chunk_id] = (squash(chunk.content.text), chunk.source.uri)
        return found


def unreachable(service: SearchService, keyed: list[KeyedQuestion], text_of: _Texts, min_overlap: float) -> list[str]:
    """Ids of the questions whose passage no chunk of the run holds."""
    missing = []
    ids = list(service.chunks)
    for k in keyed:
        if not any(holds(*text_of(cid), k, min_overlap) for cid in ids):
            missing.append(k.question.id)
    return missing


def ranked_chunks(service: SearchService, question: str, mode: SearchMode, depth: int = DEPTH) -> list[str]:
    """The first ``depth`` chunk ids for ``question`` in ``mode`` (reranked when the service reranks)."""
    reranked, warnings = service.rank_reranked(question, mode, depth)
    if warnings:  # a measurement of the reranker must not quietly measure the retrieval order
        raise RerankError(warnings[0], suggestion="Check the reranker, or evaluate without --reranker")
    return [cid for cid, _score, _rr in reranked]


def evaluate_answers(
    service: SearchService,
    questions: list[AnswerQuestion],
    modes: tuple[SearchMode, ...],
    *,
    min_overlap: float = 1.0,
    split: str | None = None,
    on_query: Callable[[], None] | None = None,
) -> AnswersResult:
    """Search every question in every mode and score where its passage first appears."""
    if not 0 < min_overlap <= 1:
        raise ConfigInvalid(f"min_overlap {min_overlap} is not in (0, 1]", suggestion="Use e.g. 1.0 or 0.5")
    cfg = service.reranker_config
    keyed = [KeyedQuestion(q) for q in questions]
    text_of = _Texts(service)
    result = AnswersResult(
        run_id=service.run_id,
        questions=len(questions),
        min_overlap=min_overlap,
        reranker=service.reranker.model_id if cfg.enabled else None,
        split=split,
        unreachable=unreachable(service, keyed, text_of, min_overlap),
    )
    kinds = sorted({q.kind for q in questions if q.kind is not None})
    for mode in modes:
        ranks: dict[str, int | None] = {}
        for k in keyed:
            ranks[k.question.id] = first_rank(
                ranked_chunks(service, k.question.question, mode), text_of, k, min_overlap
            )
            if on_query is not None:
                on_query()
        result.ranks[mode] = ranks
        result.metrics[mode] = score_ranks(ranks)
        if kinds:
            result.by_kind[mode] = {
                kind: score_ranks({q.id: ranks[q.id] for q in questions if q.kind == kind}) for kind in kinds
            }
    return result


# ---------------------------------------------------------------- the use case
def folder_run_config(folder: Path, runs_dir: Path, embedding_model: str) -> Any:
    """The docs-mode config of ``folder`` (what ``indexfoundry mcp --docs`` builds), with a run id
    derived from it: evaluating the same folder again reruns only what changed in that run."""
    import uuid

    from indexfoundry.app.docs_index import docs_config
    from indexfoundry.app.eval import EVAL_NAMESPACE
    from indexfoundry.storage.hashing import canonical_json

    config = docs_config(folder.resolve(), runs_dir, embedding_model)
    frozen = config.model_dump(mode="json", exclude={"run_id"})
    return config.model_copy(update={"run_id": str(uuid.uuid5(EVAL_NAMESPACE, "answers:" + canonical_json(frozen)))})


def evaluate_answers_file(
    *,
    answers: Path,
    folder: Path | None,
    run_id: str | None,
    runs_dir: Path,
    modes: tuple[SearchMode, ...],
    split: str | None = None,
    min_overlap: float = 1.0,
    embedding_model: str = "local",
    progress: Any = None,
    embedder: Any = None,
    reranker: str | None = None,
    top_k_to_rerank: int = 50,
) -> AnswersResult:
    """Evaluate an answers file on an existing run, or on ``folder`` indexed as docs mode indexes it."""
    from indexfoundry.app import runs as api
    from indexfoundry.app.eval import open_eval_service

    questions = read_answers(answers, split)
    if folder is not None:
        if run_id is not None:
            raise ConfigInvalid("pass a docs folder or --run-id, not both", suggestion="Drop one of them")
        if not folder.is_dir():
            raise NotFound(f"docs folder {folder} does not exist", suggestion="Check the path")
        output = api.pipeline_run(
            folder_run_config(folder, runs_dir, embedding_model),
            runs_dir=runs_dir,
            progress=progress,
            embedder=embedder,
        )
        if output.status == "failed":
            raise ConfigInvalid(
                f"indexing {folder} failed (run {output.run_id})",
                suggestion=f"See 'indexfoundry run status {output.run_id}'",
            )
        run_id = output.run_id
    elif run_id is None:
        raise ConfigInvalid("nothing to evaluate the answers on", suggestion="Pass a docs folder or --run-id")
    service = open_eval_service(runs_dir, run_id, embedder, reranker, top_k_to_rerank)
    if progress is not None:
        with progress.task("evaluate", total=len(questions) * len(modes)) as task:
            return evaluate_answers(
                service, questions, modes, min_overlap=min_overlap, split=split, on_query=lambda: task.advance(1)
            )
    return evaluate_answers(service, questions, modes, min_overlap=min_overlap, split=split)
