"""``indexfoundry eval``: retrieval quality (nDCG@10, recall@100, MRR@10) per search mode."""

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


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def evaluate(
        beir_dir: Path | None = typer.Argument(
            None,
            help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv), indexed through the pipeline.",
            show_default=False,
        ),
        split: str = typer.Option("test", "--split", help="Qrels split of the BEIR folder."),
        mode: str = typer.Option("all", "--mode", help="semantic | keyword | hybrid | all"),
        runs_dir: Path | None = RunsDir,
        run_id: str | None = typer.Option(None, "--run-id", help="Evaluate this existing run instead."),
        queries: Path | None = typer.Option(None, "--queries", help="Queries (BEIR queries.jsonl or qid<TAB>text)."),
        qrels: Path | None = typer.Option(None, "--qrels", help="Judgements (BEIR qrels TSV or TREC qrels)."),
        embedding_model: str = typer.Option(
            "local", "--embedding-model", help="Embedding model for indexing a BEIR folder ('hash' for keyword-only)."
        ),
        rankings: Path | None = typer.Option(
            None, "--rankings", help="Write every mode's ranked document ids here (TREC run format, tag = mode)."
        ),
        minimum: list[str] = typer.Option(
            [],
            "--min",
            help="METRIC=VALUE or MODE:METRIC=VALUE (repeatable): exit 1 when a metric is below it.",
        ),
        reranker: str | None = typer.Option(
            None,
            "--reranker",
            help="Rerank every mode's candidates: cross-encoder:<folder> | cohere:<model> | http:<base_url>.",
            show_default=False,
        ),
        rerank_top_k: int = typer.Option(50, "--rerank-top-k", min=1, max=1000, help="Candidates reranked."),
        record: bool = typer.Option(
            False,
            "--record",
            help="Record the metrics into the evaluated run (logs/evals.ndjson): the runs dashboard "
            "(/runs of the HTTP server) charts them over time.",
        ),
        json_out: bool = Json,
    ) -> None:
        """Measure nDCG@10, recall@100 and MRR@10 of each search mode on judged queries."""
        if mode not in ("semantic", "keyword", "hybrid", "all"):
            raise ConfigInvalid(f"unknown mode '{mode}'", suggestion="Use semantic, keyword, hybrid or all")
        thresholds = api.eval_thresholds(minimum)
        result: api.EvalResult = api.evaluate(
            beir_dir=beir_dir,
            split=split,
            run_id=run_id,
            queries=queries,
            qrels=qrels,
            mode=mode,  # type: ignore[arg-type]
            runs_dir=runs_dir,
            embedding_model=embedding_model,
            progress=RichProgress(enabled=None if not json_out else False),
            reranker=reranker,
            top_k_to_rerank=rerank_top_k,
        )
        if rankings is not None:
            api.eval_write_rankings(result, rankings)
        if record:
            source = queries if queries is not None else beir_dir
            api.eval_record(result, runs_dir=runs_dir, source=source.name if source is not None else None)
        if json_out:
            typer.echo(json.dumps(result.to_json(), indent=2))
        else:
            render(result)
        missed = api.eval_missed(result.metrics, thresholds)
        for line in missed:
            typer.echo(f"below threshold: {line}", err=True)
        if missed:
            raise typer.Exit(1)
