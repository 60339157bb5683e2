"""The run layout: every file name of a run, defined once.

```
runs/<run_id>/
  manifest.json  config.json
  raw/        <sha256>.<ext>, raw_manifest.jsonl, files.sha256
  extracted/  <sha256>.txt, <sha256>.pages.jsonl, documents.jsonl, extraction_report.json, files.sha256
  normalized/ chunks.jsonl, dedupe_report.json, metadata_enrichment.json
  indexed/    embeddings.jsonl, upsert_stats.json, vector_manifest.json, chroma/
  served/     openapi.json, retrieval_profile.json
  logs/       events.ndjson, errors.ndjson, requests.ndjson, evals.ndjson
```
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from indexfoundry.errors import ConfigInvalid, NotFound, RunNotFound
from indexfoundry.models.ids import is_run_id as is_run_id  # re-exported: the shape of a run id
from indexfoundry.models.ids import is_run_prefix

if TYPE_CHECKING:
    from indexfoundry.models.config import GlobalConfig

PHASES: tuple[str, ...] = ("connect", "extract", "normalize", "index", "serve")

# Folder each phase writes to.
PHASE_DIRS: dict[str, str] = {
    "connect": "raw",
    "extract": "extracted",
    "normalize": "normalized",
    "index": "indexed",
    "serve": "served",
}


# Matches named in an ambiguous-prefix error.
_MAX_LISTED = 10

ENV_RUNS_DIR = "INDEXFOUNDRY_RUNS_DIR"
CACHE_DIR_NAME = ".cache"


def unique_run_prefix(runs_dir: Path, prefix: str) -> str:
    """The one run id in ``runs_dir`` starting with ``prefix``."""
    matches = (
        sorted(p.name for p in runs_dir.iterdir() if p.name.startswith(prefix) and is_run_id(p.name))
        if runs_dir.is_dir()
        else []
    )
    matches = [m for m in matches if (runs_dir / m / "manifest.json").is_file()]
    if not matches:
        raise RunNotFound(
            f"no run id starts with '{prefix}' in {runs_dir}",
            suggestion="List runs with 'indexfoundry run list' or pass --runs-dir",
        )
    if len(matches) > 1:
        listed = ", ".join(matches[:_MAX_LISTED]) + (
            f" and {len(matches) - _MAX_LISTED} more" if len(matches) > _MAX_LISTED else ""
        )
        raise ConfigInvalid(
            f"run id prefix '{prefix}' is ambiguous: it matches {len(matches)} runs ({listed})",
            suggestion="Type more characters of the run id",
            details={"matches": matches[:_MAX_LISTED]},
        )
    return matches[0]


def resolve_runs_dir(runs_dir: str | Path | None = None, configured: str | None = None) -> Path:
    """The runs folder: explicit argument, then $INDEXFOUNDRY_RUNS_DIR, then config, then ./runs."""
    if runs_dir is not None:
        return Path(runs_dir)
    env = os.environ.get(ENV_RUNS_DIR)
    if env:
        return Path(env)
    if configured:
        return Path(configured)
    return Path("runs")


def runs_dir_for(runs_dir: str | Path | None = None, global_config: GlobalConfig | None = None) -> Path:
    """The runs folder: argument, $INDEXFOUNDRY_RUNS_DIR, global config, or ./runs."""
    from indexfoundry.models.config import load_global_config

    glob = global_config or load_global_config()
    return resolve_runs_dir(runs_dir, glob.storage.runs_dir if glob.storage.runs_dir != "./runs" else None)


@dataclass(frozen=True)
class RunLayout:
    """Paths of one run. Nothing outside this class spells a run file name."""

    root: Path

    @classmethod
    def for_run(cls, runs_dir: Path, run_id: str) -> RunLayout:
        """Layout of ``run_id`` under ``runs_dir``; refuses anything that is not a run id."""
        if not is_run_id(run_id):
            raise RunNotFound(
                f"'{run_id}' is not a run id",
                suggestion="Run ids are UUIDs; list them with 'indexfoundry run list'",
            )
        return cls(runs_dir / run_id)

    @classmethod
    def existing(cls, runs_dir: Path, run_id: str) -> RunLayout:
        """Layout of a run that must already exist, else ``RUN_NOT_FOUND``. A unique prefix of
        a run id names that run; an ambiguous one is CONFIG_INVALID listing its matches."""
        if not is_run_id(run_id) and is_run_prefix(run_id):
            run_id = unique_run_prefix(runs_dir, run_id)
        layout = cls.for_run(runs_dir, run_id)
        if not layout.manifest.is_file():
            raise RunNotFound(
                f"run {run_id} does not exist in {runs_dir}",
                suggestion="List runs with 'indexfoundry run list' or pass --runs-dir",
            )
        return layout

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def runs_dir(self) -> Path:
        return self.root.parent

    # top level
    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    def phase_dir(self, phase: str) -> Path:
        return self.root / PHASE_DIRS[phase]

    def file_list(self, phase: str) -> Path:
        """The phase's per-item files (raw files, extracted texts), one ``<sha256>  <path>`` line
        each (``sha256sum``'s format), named by the manifest instead of one by one."""
        return self.phase_dir(phase) / "files.sha256"

    # raw/
    @cached_property  # looked up once per raw file or text of a large run
    def raw_dir(self) -> Path:
        return self.root / "raw"

    @property
    def raw_manifest(self) -> Path:
        return self.raw_dir / "raw_manifest.jsonl"

    def raw_file(self, sha256: str, ext: str) -> Path:
        return self.raw_dir / f"{sha256}.{ext}"

    # extracted/
    @cached_property  # looked up once per raw file or text of a large run
    def extracted_dir(self) -> Path:
        return self.root / "extracted"

    @property
    def documents(self) -> Path:
        return self.extracted_dir / "documents.jsonl"

    @property
    def extraction_report(self) -> Path:
        return self.extracted_dir / "extraction_report.json"

    def extracted_text(self, key: str) -> Path:
        return self.extracted_dir / f"{key}.txt"

    def extracted_pages(self, key: str) -> Path:
        return self.extracted_dir / f"{key}.pages.jsonl"

    # normalized/
    @property
    def normalized_dir(self) -> Path:
        return self.root / "normalized"

    @property
    def chunks(self) -> Path:
        return self.normalized_dir / "chunks.jsonl"

    @property
    def dedupe_report(self) -> Path:
        return self.normalized_dir / "dedupe_report.json"

    @property
    def enrichment_report(self) -> Path:
        return self.normalized_dir / "metadata_enrichment.json"

    @property
    def chunk_stats(self) -> Path:
        return self.normalized_dir / "chunk_stats.json"

    @property
    def document_figures(self) -> Path:
        return self.normalized_dir / "document_figures.jsonl"

    # indexed/
    @property
    def indexed_dir(self) -> Path:
        return self.root / "indexed"

    @property
    def embeddings(self) -> Path:
        return self.indexed_dir / "embeddings.jsonl"

    @property
    def upsert_stats(self) -> Path:
        return self.indexed_dir / "upsert_stats.json"

    @property
    def vector_manifest(self) -> Path:
        return self.indexed_dir / "vector_manifest.json"

    @property
    def chroma_dir(self) -> Path:
        return self.indexed_dir / "chroma"

    # Embedded vector stores other than Chroma (used when no path/uri is configured).
    @property
    def local_store_dir(self) -> Path:
        return self.indexed_dir / "local"

    @property
    def qdrant_dir(self) -> Path:
        return self.indexed_dir / "qdrant"

    @property
    def milvus_file(self) -> Path:
        return self.indexed_dir / "milvus.db"

    @property
    def keyword_index_dir(self) -> Path:
        return self.indexed_dir / "bm25"

    @property
    def keyword_ids(self) -> Path:
        """Chunk ids in BM25 row order, plus the tokenizer settings (the other files are bm25s')."""
        return self.keyword_index_dir / "chunk_ids.json"

    # served/
    @property
    def served_dir(self) -> Path:
        return self.root / "served"

    @property
    def openapi(self) -> Path:
        return self.served_dir / "openapi.json"

    @property
    def retrieval_profile(self) -> Path:
        return self.served_dir / "retrieval_profile.json"

    # llms.txt export (default folder: served/; any folder can be passed)
    @staticmethod
    def llms_txt(out_dir: Path) -> Path:
        return out_dir / "llms.txt"

    @staticmethod
    def llms_full_txt(out_dir: Path) -> Path:
        return out_dir / "llms-full.txt"

    @staticmethod
    def llms_pages_dir(out_dir: Path) -> Path:
        return out_dir / "pages"

    # logs/
    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def events_log(self) -> Path:
        return self.logs_dir / "events.ndjson"

    @property
    def errors_log(self) -> Path:
        return self.logs_dir / "errors.ndjson"

    @property
    def requests_log(self) -> Path:
        """HTTP API request log (one line per request while the run is served)."""
        return self.logs_dir / "requests.ndjson"

    @property
    def evals_log(self) -> Path:
        """Retrieval quality recorded for the run (``indexfoundry eval --record``), one line each."""
        return self.logs_dir / "evals.ndjson"

    def create(self) -> None:
        """Create the run folder and its phase subfolders."""
        for sub in ("raw", "extracted", "normalized", "indexed", "served", "logs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def resolve_inside(self, relative: str) -> Path:
        """Resolve a path an agent or user passed, refusing anything outside the run folder."""
        candidate = (self.root / relative).resolve()
        root = self.root.resolve()
        if candidate != root and root not in candidate.parents:
            raise NotFound(
                f"path '{relative}' is outside run {self.run_id}",
                suggestion="Pass a path relative to the run folder, without '..'",
            )
        return candidate


def cache_dir(runs_dir: Path) -> Path:
    """Folder for caches shared by the runs of one runs folder (embedding cache...)."""
    return runs_dir / CACHE_DIR_NAME


INUSE_DIR_NAME = ".inuse"
LOCKS_DIR_NAME = ".locks"


def inuse_dir(runs_dir: Path) -> Path:
    """Folder of 'run in use' marks (served, used as a base); cleanup never removes those runs."""
    return runs_dir / INUSE_DIR_NAME


SERVERS_DIR_NAME = ".servers"


def servers_dir(runs_dir: Path) -> Path:
    """Folder of pid files of HTTP servers serving runs of this runs folder (``serve status``/``stop``)."""
    return runs_dir / SERVERS_DIR_NAME


def server_pid_file(runs_dir: Path, port: int) -> Path:
    """Pid file of the HTTP server listening on ``port``."""
    return servers_dir(runs_dir) / f"{port}.json"


def locks_dir(runs_dir: Path) -> Path:
    """Folder of lock files for things several runs share (e.g. a configured vector store)."""
    return runs_dir / LOCKS_DIR_NAME
