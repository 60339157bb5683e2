"""``indexfoundry eval``: retrieval quality per search mode: nDCG@10, recall@100 and MRR@10 on
judged documents (BEIR), or hit@k and MRR@10 of answer passages (``--answers FILE``)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.surfaces.cli.options import Json, RunsDir
from indexfoundry.surfaces.cli.output import RichProgress


def render(result: api.EvalResult) -> None:
    reranked = f", reranked by {result.reranker}" if result.reranker else ""
    typer.echo(f"run {result.run_id}, {result.queries} judged queries{reranked}")
    typer.echo(f"{'mode':<10}" + "".join(f"{m:>12}" for m in api.EVAL_METRICS))
    for mode, values in result.metrics.items():
        typer.echo(f"{mode:<10}" + "".join(f"{values[m]:>12.4f}" for m in api.EVAL_METRICS))


def render_answers(result: api.AnswersResult) -> None:
    reranked = f", reranked by {result.reranker}" if result.reranker else ""
    split = f" ({result.split})" if result.split else ""
    typer.echo(f"run {result.run_id}, {result.questions} questions{split}{reranked}")
    typer.echo(f"{'mode':<10}" + "".join(f"{m:>10}" for m in api.ANSWER_METRICS))
    for mode, values in result.metrics.items():
        typer.echo(f"{mode:<10}" + "".join(f"{values[m]:>10.4f}" for m in api.ANSWER_METRICS))


def warn_unreachable(result: api.AnswersResult) -> None:
    """On stderr in every output form: a passage no chunk holds is a bad key or a chunking cut."""
    if result.unreachable:
        shown = ", ".join(result.unreachable[:5]) + (" ..." if len(result.unreachable) > 5 else "")
        typer.echo(
            f"warning: {len(result.unreachable)} passages are in no chunk of the run (counted as misses): {shown}",
            err=True,
        )


def _answers(
    answers: Path, folder: Path | None, split: str | None, mode: str, minimum: list[str], **options: object
) -> tuple[api.AnswersResult, dict[tuple[str | None, str], float]]:
    if split not in (None, "all", "dev", "test"):
        raise ConfigInvalid(f"unknown split '{split}' for an answers file", suggestion="Use dev, test or all")
    thresholds = api.eval_thresholds(minimum, answers=True)
    result = api.evaluate_answers(
        answers,
        folder=folder,
        mode=mode,  # type: ignore[arg-type]
        split=None if split in (None, "all") else split,  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )
    return result, thresholds


def _evaluate_answers(
    answers: Path,
    folder: Path | None,
    split: str | None,
    mode: str,
    minimum: list[str],
    json_out: bool,
    **options: object,
) -> None:
    found, limits = _answers(answers, folder, split, mode, minimum, **options)
    if json_out:
        typer.echo(json.dumps(found.to_json(), indent=2))
    else:
        render_answers(found)
    warn_unreachable(found)
    _exit_below(found.metrics, limits)


AnswersFile = typer.Option(
    None,
    "--answers",
    help="Questions keyed to verbatim answer passages (JSON): hit@1/3/5/10 and MRR@10 per mode.",
    show_default=False,
)
Split = typer.Option(
    None,
    "--split",
    help="BEIR: qrels split (default test). --answers: dev, test or all (default all).",
    show_default=False,
)
MinOverlap = typer.Option(
    1.0,
    "--min-overlap",
    min=0.01,
    max=1.0,
    help="--answers: share of a passage cut by a chunk boundary that one chunk must hold to count.",
)


EmbeddingModel = typer.Option(
    "local", "--embedding-model", help="Embedding model for indexing a BEIR folder ('hash' for keyword-only)."
)
Rankings = typer.Option(
    None, "--rankings", help="Write every mode's ranked document ids here (TREC run format, tag = mode)."
)
Minimum = typer.Option(
    [],
    "--min",
    help="METRIC=VALUE or MODE:METRIC=VALUE (repeatable): exit 1 when a metric is below it.",
)
Reranker = typer.Option(
    None,
    "--reranker",
    help="Rerank every mode's candidates: cross-encoder:<folder> | cohere:<model> | http:<base_url>.",
    show_default=False,
)
RerankTopK = typer.Option(50, "--rerank-top-k", min=1, max=1000, help="Candidates reranked.")
Record = typer.Option(
    False,
    "--record",
    help="Record the metrics into the evaluated run (logs/evals.ndjson): the runs dashboard "
    "(/runs of the HTTP server) charts them over time.",
)


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def evaluate(
        beir_dir: Path | None = typer.Argument(
            None,
            help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv), indexed through the pipeline; "
            "with --answers: a docs folder, indexed as 'mcp --docs' indexes it.",
            show_default=False,
        ),
        answers: Path | None = AnswersFile,
        split: str | None = Split,
        min_overlap: float = MinOverlap,
        mode: str = typer.Option("all", "--mode", help="semantic | keyword | hybrid | all"),
        runs_dir: Path | None = RunsDir,
        run_id: str | None = typer.Option(None, "--run-id", help="Evaluate this existing run instead."),
        queries: Path | None = typer.Option(None, "--queries", help="Queries (BEIR queries.jsonl or qid<TAB>text)."),
        qrels: Path | None = typer.Option(None, "--qrels", help="Judgements (BEIR qrels TSV or TREC qrels)."),
        embedding_model: str = EmbeddingModel,
        rankings: Path | None = Rankings,
        minimum: list[str] = Minimum,
        reranker: str | None = Reranker,
        rerank_top_k: int = RerankTopK,
        record: bool = Record,
        json_out: bool = Json,
    ) -> None:
        """Measure each search mode: nDCG@10, recall@100 and MRR@10 on judged queries (BEIR), or
        hit@k and MRR@10 of answer passages (--answers)."""
        if mode not in ("semantic", "keyword", "hybrid", "all"):
            raise ConfigInvalid(f"unknown mode '{mode}'", suggestion="Use semantic, keyword, hybrid or all")
        progress = RichProgress(enabled=None if not json_out else False)
        if answers is not None:
            if queries is not None or qrels is not None or rankings is not None or record:
                raise ConfigInvalid(
                    "--queries, --qrels, --rankings and --record are for BEIR evaluations",
                    suggestion="Drop them with --answers",
                )
            _evaluate_answers(
                answers,
                beir_dir,
                split,
                mode,
                minimum,
                json_out,
                run_id=run_id,
                min_overlap=min_overlap,
                runs_dir=runs_dir,
                embedding_model=embedding_model,
                progress=progress,
                reranker=reranker,
                top_k_to_rerank=rerank_top_k,
            )
            return
        source = queries if queries is not None else beir_dir
        record_as = (source.name if source is not None else "") if record else None
        _evaluate_beir(
            minimum,
            json_out,
            rankings,
            record_as,
            beir_dir=beir_dir,
            split=split or "test",
            run_id=run_id,
            queries=queries,
            qrels=qrels,
            mode=mode,
            runs_dir=runs_dir,
            embedding_model=embedding_model,
            progress=progress,
            reranker=reranker,
            top_k_to_rerank=rerank_top_k,
        )


def _evaluate_beir(
    minimum: list[str],
    json_out: bool,
    rankings: Path | None,
    record_as: str | None,
    runs_dir: Path | None = None,
    **options: object,
) -> None:
    """A BEIR evaluation; ``record_as``: None, or the queries' file name to record the metrics
    under in the run ("" when the queries have no file of their own)."""
    thresholds = api.eval_thresholds(minimum)
    result: api.EvalResult = api.evaluate(runs_dir=runs_dir, **options)  # type: ignore[arg-type]
    if rankings is not None:
        api.eval_write_rankings(result, rankings)
    if record_as is not None:
        api.eval_record(result, runs_dir=runs_dir, source=record_as or None)
    if json_out:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        render(result)
    _exit_below(result.metrics, thresholds)


def _exit_below(metrics: dict[str, dict[str, float]], thresholds: dict[tuple[str | None, str], float]) -> None:
    missed = api.eval_missed(metrics, thresholds)
    for line in missed:
        typer.echo(f"below threshold: {line}", err=True)
    if missed:
        raise typer.Exit(1)
