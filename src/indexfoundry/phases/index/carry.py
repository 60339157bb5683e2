"""A rerun's unchanged chunks keep their rows: the index phase's carry-over.

Every row of ``indexed/embeddings.jsonl`` records the hash of the ``chunks.jsonl`` line it was
made from (``EmbeddingRecord.chunk_line``). When the phase's previous output (the run's own,
rerun in place, or the followed run's: its base, or the ``latest`` a plain run replaces) was
made with the same index config, phase version, library versions and model, a chunk whose line
has that hash keeps its rows (its own vector and its windows') as bytes: it is not validated,
its text is not looked up in the embedding cache, its metadata and row hash are not made
again. Only the other chunks go through ``embed_chunks``. Both ways write the same bytes (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from indexfoundry.backends.embedding.windows import chunk_of
from indexfoundry.models.manifests import PhaseManifest
from indexfoundry.phases.base import PhaseContext, carry_source
from indexfoundry.phases.index.embedding import Carried, CarriedRow
from indexfoundry.storage.atomic import loads_json, read_json
from indexfoundry.storage.filehashes import file_sha256_many
from indexfoundry.storage.hashing import sha256_bytes
from indexfoundry.storage.layout import RunLayout

if TYPE_CHECKING:
    from indexfoundry.backends.keyword.update import PreviousKeywords


@dataclass(frozen=True)
class PreviousRows:
    """The previous output's embeddings rows, by chunk id, and the run that holds them."""

    run: RunLayout
    entry: PhaseManifest
    by_chunk: dict[str, tuple[str, list[tuple[str, bytes, dict[str, Any]]]]]  # id -> (line hash, rows)


@dataclass(frozen=True)
class Split:
    """A run's chunk lines split into the carried rows and the chunks to embed now."""

    carried: Carried | None
    lines: list[bytes]  # the lines of the chunks to embed now, in file order
    line_hashes: dict[str, str]  # chunk id -> its line's hash, for every chunk


def previous_rows(
    ctx: PhaseContext, config_hash: str, version: str, tools: dict[str, str], same_model: dict[str, Any]
) -> PreviousRows | None:
    """The rows the phase may carry, or None: a remote executor (its workers' devices decide
    the vectors), no previous output made the same way (``phases.base.carry_source``; and the
    model's details in ``same_model``), or the embeddings file no longer has its recorded hash."""
    if ctx.executor.remote:
        return None
    source = carry_source(ctx, "index", config_hash, version, tools)
    if source is None:
        return None
    run, entry = source
    if any(entry.details.get(key) != value for key, value in same_model.items()):
        return None
    rel = run.embeddings.relative_to(run.root).as_posix()
    recorded = {a.path: a.sha256 for a in entry.artifacts}
    try:
        if rel not in recorded or file_sha256_many([run.embeddings])[0] != recorded[rel]:
            return None
        data = run.embeddings.read_bytes()
    except OSError:
        return None
    by_chunk: dict[str, tuple[str, list[tuple[str, bytes, dict[str, Any]]]]] = {}
    for line in data.splitlines(keepends=True):
        row = orjson.loads(line)
        line_hash = row.get("chunk_line")
        if not isinstance(line_hash, str):
            return None  # rows written before lines were recorded: nothing to carry
        store_id = row["chunk_id"]
        found = by_chunk.setdefault(chunk_of(store_id), (line_hash, []))
        found[1].append((store_id, line, row))
    return PreviousRows(run, entry, by_chunk)


def split_chunks(chunk_lines: list[bytes], previous: PreviousRows | None) -> Split:
    """Which chunks keep their previous rows (their line is the one those rows were made from)
    and which are embedded now."""
    hashes: dict[str, str] = {}
    fresh: list[bytes] = []
    rows: dict[str, CarriedRow] = {}
    kept: dict[str, bytes] = {}
    dimensions = 0
    for line in chunk_lines:
        if not line.strip():
            continue
        chunk_id = loads_json(line)["chunk_id"]
        line_hash = hashes[chunk_id] = sha256_bytes(line)
        before = previous.by_chunk.get(chunk_id) if previous is not None else None
        if before is None or before[0] != line_hash:
            fresh.append(line)
            continue
        kept[chunk_id] = line
        for store_id, row_line, row in before[1]:
            rows[store_id] = CarriedRow(row_line, row["text_hash"], row["row_hash"], row["vector"])
            dimensions = int(row["dimensions"])
    carried = Carried(rows, kept, dimensions) if kept else None
    return Split(carried, fresh, hashes)


def previous_keywords(previous: PreviousRows | None) -> PreviousKeywords | None:
    """The previous output's keyword index, when its files still have their recorded hashes:
    a rebuild keeps its unchanged texts' pairs (``backends/keyword/update.py``)."""
    from indexfoundry.backends.keyword.update import PreviousKeywords

    if previous is None:
        return None
    run = previous.run
    prefix = run.keyword_index_dir.relative_to(run.root).as_posix() + "/"
    recorded = {a.path: a.sha256 for a in previous.entry.artifacts if a.path.startswith(prefix)}
    ids_file = run.keyword_ids.relative_to(run.root).as_posix()
    try:
        if ids_file not in recorded or file_sha256_many([run.root / rel for rel in recorded]) != list(
            recorded.values()
        ):
            return None
        chunk_ids = [str(c) for c in read_json(run.keyword_ids)["chunk_ids"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    hashes = {
        chunk_id: row["text_hash"]
        for chunk_id, (_line, rows) in previous.by_chunk.items()
        for store_id, _bytes, row in rows
        if store_id == chunk_id
    }
    return PreviousKeywords(run.keyword_index_dir, chunk_ids, hashes)
