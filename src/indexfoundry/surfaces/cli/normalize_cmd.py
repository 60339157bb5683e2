"""``indexfoundry normalize``: rerun the phase, and its single-purpose tool commands
(``chunk``, ``enrich``, ``dedupe``), each a thin wrapper over the registered tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
import yaml
from pydantic import BaseModel

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.surfaces.cli.options import Force, Json, RunId, RunsDir
from indexfoundry.surfaces.cli.output import render
from indexfoundry.surfaces.cli.phase_group import phase_group

app = phase_group("normalize", "Normalize phase: chunk, enrich and dedupe.")


def _call(name: str, run_id: str, runs_dir: Path | None, arguments: dict[str, Any]) -> BaseModel:
    return api.call_tool(name, {"run_id": run_id, **arguments}, runs_dir=runs_dir)


@app.command("chunk")
def chunk(
    run_id: str = RunId,
    strategy: str = typer.Option(
        "recursive", "--strategy", help="fixed_chars, by_paragraph, by_heading, by_page, by_sentence or recursive."
    ),
    max_chars: int = typer.Option(1500, "--max-chars", help="Maximum characters per chunk (100-10000)."),
    min_chars: int = typer.Option(100, "--min-chars", help="Minimum characters per chunk (50-500)."),
    overlap_chars: int = typer.Option(150, "--overlap-chars", help="Overlap between chunks (0-500)."),
    split: list[str] | None = typer.Option(
        None, "--split", help="Separator for recursive splitting, coarse to fine (repeat; '\\n' escapes allowed)."
    ),
    input_paths: list[str] | None = typer.Option(
        None, "--input", help="Extracted text file relative to the run (repeat; default: every document)."
    ),
    runs_dir: Path | None = RunsDir,
    force: bool = Force,
    json_out: bool = Json,
) -> None:
    """Chunk extracted documents into normalized/chunks.jsonl (indexfoundry_normalize_chunk)."""
    arguments: dict[str, Any] = {
        "input_paths": list(input_paths or []),
        "strategy": strategy,
        "max_chars": max_chars,
        "min_chars": min_chars,
        "overlap_chars": overlap_chars,
        "force": force,
    }
    if split:
        arguments["split_hierarchy"] = [s.encode("utf-8").decode("unicode_escape") for s in split]
    out: Any = _call("indexfoundry_normalize_chunk", run_id, runs_dir, arguments)
    stats = out.stats
    render(
        out,
        json_out,
        [
            f"{'skipped (unchanged)' if out.skipped else 'chunked'}: {stats.documents_processed} documents → "
            f"{stats.chunks_created} chunks ({out.chunker_config.strategy}, avg {stats.avg_chunk_chars} chars, "
            f"{stats.chunks_below_min} below min, {stats.chunks_at_max} hard-cut)",
            f"output: {out.output_path}",
            *[f"error: {e}" for e in out.errors],
        ],
    )


def _load_rules(value: str | None) -> dict[str, Any]:
    """``--rules``: inline JSON, or a JSON/YAML file."""
    if not value:
        return {}
    path = Path(value)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else json.loads(value)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigInvalid(f"--rules is neither a rules file nor JSON: {exc}", suggestion="Pass a file or JSON") from (
            None
        )
    if not isinstance(data, dict):
        raise ConfigInvalid("--rules must be a JSON object", suggestion='e.g. {"extract_dates": true}')
    return data


@app.command("enrich")
def enrich(
    run_id: str = RunId,
    rules: str | None = typer.Option(None, "--rules", help="Rules as JSON or a JSON/YAML file (the tool's 'rules')."),
    detect_language: bool | None = typer.Option(
        None, "--detect-language/--no-detect-language", help="Detect each chunk's language (default on)."
    ),
    extract_dates: bool | None = typer.Option(
        None, "--extract-dates/--no-extract-dates", help="Extract ISO 8601 dates."
    ),
    chunks_path: str = typer.Option("normalized/chunks.jsonl", "--chunks", help="Chunks file relative to the run."),
    runs_dir: Path | None = RunsDir,
    force: bool = Force,
    json_out: bool = Json,
) -> None:
    """Add language, tags, sections and dates to chunk metadata (indexfoundry_normalize_enrich)."""
    body = _load_rules(rules)
    if detect_language is not None:
        body["detect_language"] = detect_language
    if extract_dates is not None:
        body["extract_dates"] = extract_dates
    out: Any = _call(
        "indexfoundry_normalize_enrich", run_id, runs_dir, {"rules": body, "chunks_path": chunks_path, "force": force}
    )
    stats = out.stats
    languages = ", ".join(f"{k}={v}" for k, v in stats.languages.items()) or "-"
    render(
        out,
        json_out,
        [
            f"{'skipped (unchanged)' if out.skipped else 'enriched'}: {stats.chunks_enriched}/{stats.chunks} chunks; "
            f"languages: {languages}; tags: {len(stats.tags)}; dates: {stats.dates_found}",
            f"report: {out.enrichment_report_path}",
        ],
    )


@app.command("dedupe")
def dedupe(
    run_id: str = RunId,
    method: str = typer.Option("exact", "--method", help="exact, simhash or minhash."),
    threshold: float = typer.Option(0.95, "--threshold", help="Fuzzy methods: minimum similarity (0.8-1.0)."),
    scope: str = typer.Option("global", "--scope", help="global or per_document."),
    chunks_path: str = typer.Option("normalized/chunks.jsonl", "--chunks", help="Chunks file relative to the run."),
    runs_dir: Path | None = RunsDir,
    force: bool = Force,
    json_out: bool = Json,
) -> None:
    """Remove duplicate chunks, keeping the first of each group (indexfoundry_normalize_dedupe)."""
    out: Any = _call(
        "indexfoundry_normalize_dedupe",
        run_id,
        runs_dir,
        {
            "method": method,
            "similarity_threshold": threshold,
            "scope": scope,
            "chunks_path": chunks_path,
            "force": force,
        },
    )
    stats = out.stats
    render(
        out,
        json_out,
        [
            f"{'skipped (unchanged)' if out.skipped else 'deduped'}: {stats.input_chunks} → {stats.output_chunks} "
            f"chunks ({stats.duplicates_removed} removed in {stats.duplicate_groups} groups)",
            f"report: {out.dedupe_report_path}",
        ],
    )
