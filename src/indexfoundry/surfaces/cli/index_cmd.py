"""``indexfoundry index``: rerun the phase, and its single-purpose tool commands
(``embed``, ``upsert``, ``verify``; ``prepare``: the model's one-time files). ``embed`` and
``upsert`` default to the run's own config."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from indexfoundry import api
from indexfoundry.surfaces.cli.options import Force, Json, RunId, RunsDir
from indexfoundry.surfaces.cli.output import print_json
from indexfoundry.surfaces.cli.phase_group import phase_group

if TYPE_CHECKING:
    from indexfoundry.models.config import PipelineConfig

app = phase_group("index", "Index phase: embed chunks and upsert them into the vector store.")


def _run(run_id: str, runs_dir: Path | None) -> tuple[Path, str, PipelineConfig]:
    root = api.runs_dir_for(runs_dir)
    with api.open_run(run_id, root) as run:
        return root, run.id, run.config


def _model_from_spec(spec: str, dimensions: int | None, api_key_env: str, base_url: str | None) -> dict[str, Any]:
    """``index.embedding_model`` → the tool's ``model`` object."""
    from indexfoundry.models.embedders import EMBEDDERS
    from indexfoundry.models.embedding import DEFAULT_HASH_DIMENSIONS, parse_embedding_model

    parsed = parse_embedding_model(spec, "--model")
    entry = EMBEDDERS[parsed.provider]
    if entry.tool_models:
        return {"provider": entry.tool_name, "model_name": entry.tool_models[0]}
    if entry.naming == "dims":
        dims = getattr(parsed, "dimensions", None) or dimensions or DEFAULT_HASH_DIMENSIONS
        return {"provider": entry.tool_name, "model_name": entry.name, "dimensions": dims}
    model = getattr(parsed, "model", "")
    out: dict[str, Any] = {"provider": entry.tool_name, "model_name": model, "api_key_env": api_key_env}
    if dimensions:
        out["dimensions"] = dimensions
    if base_url:
        out["base_url"] = base_url
    return out


@app.command("embed")
def embed(
    run_id: str = RunId,
    model: str | None = typer.Option(
        None,
        "--model",
        help="Embedding model (default: the run's index.embedding_model), e.g. openai:text-embedding-3-small.",
    ),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Texts per embedding call (1-500)."),
    runs_dir: Path | None = RunsDir,
    force: bool = Force,
    json_out: bool = Json,
) -> None:
    """Embed the run's chunks into indexed/embeddings.jsonl (indexfoundry_index_embed)."""
    root, rid, config = _run(run_id, runs_dir)
    cfg = config.index
    arguments: dict[str, Any] = {
        "run_id": rid,
        "model": _model_from_spec(model or cfg.embedding_model, cfg.dimensions, cfg.api_key_env, cfg.base_url),
        "batch_size": batch_size or cfg.batch_size,
        "normalize_vectors": cfg.normalize_vectors,
        "retry_config": cfg.retry_config.model_dump(),
        "force": force,
    }
    out: Any = api.call_tool("indexfoundry_index_embed", arguments, runs_dir=root)
    if json_out:
        print_json(out)
        return
    stats = out.stats
    state = "skipped (up to date)" if out.skipped else "embedded"
    typer.echo(
        f"{state}: {stats.chunks} chunks with {out.model_used} ({stats.dimensions} dims; "
        f"{stats.texts_embedded} embedded, {stats.texts_from_cache} from cache)"
    )
    typer.echo(f"output: {out.output_path}")


@app.command("upsert")
def upsert(
    run_id: str = RunId,
    mode: str | None = typer.Option(None, "--mode", help="insert, upsert or replace (default: the run's config)."),
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Upsert the run's embeddings into its vector store, prune and verify (indexfoundry_index_upsert)."""
    root, rid, config = _run(run_id, runs_dir)
    vdb = config.index.vector_db
    connection = {"collection": vdb.collection, "namespace": vdb.namespace, **vdb.connection}
    arguments: dict[str, Any] = {
        "run_id": rid,
        "provider": vdb.provider,
        "connection": {k: v for k, v in connection.items() if v is not None},
        "metadata_fields": vdb.metadata_fields,
        "store_text": vdb.store_text,
        "upsert_mode": mode or vdb.upsert_mode,
        "batch_size": vdb.batch_size,
    }
    out: Any = api.call_tool("indexfoundry_index_upsert", arguments, runs_dir=root)
    if json_out:
        print_json(out)
        return
    s = out.stats
    typer.echo(
        f"upserted into {vdb.provider}:{out.vector_manifest.collection}: {s.vectors_sent} sent "
        f"({s.vectors_inserted} new, {s.vectors_updated} updated), {s.vectors_unchanged} unchanged, "
        f"{s.vectors_pruned} pruned, in {s.duration_ms} ms; store verified"
    )


@app.command("verify")
def verify(
    run_id: str = RunId,
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Compare the vector store's ids with the run's embeddings: missing and extra ids (exit 1 if any)."""
    out = api.verify_index(run_id, runs_dir=runs_dir)
    if json_out:
        print_json(out)
    else:
        where = f"{out.provider}:{out.collection}" + (f" (namespace {out.namespace})" if out.namespace else "")
        typer.echo(f"{where}: {out.present} ids in the store, {out.expected} in the run")
        for cid in out.missing:
            typer.echo(f"missing: {cid}")
        for cid in out.extra:
            typer.echo(f"extra: {cid}")
        typer.echo("ok" if out.ok else f"{len(out.missing)} missing, {len(out.extra)} extra")
    if not out.ok:
        raise typer.Exit(1)


@app.command("prepare")
def prepare(
    model: str = typer.Option("local", "--model", help="Embedding model whose one-time files to make."),
    json_out: bool = Json,
) -> None:
    """Make the model's one-time files on this machine (the local model's ONNX file), so the first run does not."""
    import time

    start = time.monotonic()
    model_id = api.prepare_model(model)
    seconds = round(time.monotonic() - start, 1)
    if json_out:
        print_json({"model": model, "model_id": model_id, "seconds": seconds})
        return
    typer.echo(f"{model} is ready: {model_id} ({seconds} s)")
