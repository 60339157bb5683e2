"""The Ray executor on a real two-node Ray cluster (``ray_support.py``: inside a network
namespace with only loopback up; the driver runs there too).

The same config through the local executor and through Ray gives byte-identical artifacts,
also incrementally (``--base`` after an edit and a deletion); a worker process killed during
extraction or during embedding is retried and the run is still identical; texts already in
the embedding cache are never sent to a worker. Few and small: the cluster takes seconds to
start and the OCR page a few more.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.models.records import DocumentChunk
from tests.conftest import write_config, write_tree
from tests.determinism.test_byte_identical import content_files, store_contents
from tests.integration.ray_support import RayCluster, driver, ray_cluster
from tests.waiting import wait_for

pytestmark = [pytest.mark.ray, pytest.mark.slow]  # a real cluster: never in the fast tier
CLI = [sys.executable, "-m", "indexfoundry"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    with ray_cluster() as started:
        yield started


def scanned_pdf(lines: list[str]) -> bytes:
    """A one-page PDF that is only an image of text (no text layer): extraction OCRs it."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (1275, 1650), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=36)
    for number, line in enumerate(lines):
        draw.text((100, 120 + number * 60), line, fill=0, font=font)
    out = io.BytesIO()
    image.save(out, format="PDF", resolution=150)
    return out.getvalue()


MIXED: dict[str, str | bytes] = {
    "guide/install.md": "# Install\n\n## Requirements\n\nPython 3.11 or newer.\n\n## Pip\n\nRun pip install sample.\n",
    "guide/theme.md": "# Theme\n\nSet theme.name in the config file to change the colours.\n",
    "site/page.html": (
        "<html><head><title>Page</title></head><body><h1>Deploying</h1>"
        "<p>Deploy the site with the build command and copy the output folder.</p></body></html>"
    ),
    "data/items.csv": "id,title,text\n1,First,The first record talks about apples.\n2,Second,Pears in the second.\n",
    "data/notes.jsonl": '{"id": "a", "title": "Alpha", "text": "Alpha notes."}\n'
    '{"id": "b", "title": "Beta", "text": "Beta notes."}\n',
}


def mixed_tree(root: Path, *, ocr: bool = True) -> Path:
    files = dict(MIXED)
    if ocr:
        files["scans/report.pdf"] = scanned_pdf(
            ["Scanned quarterly report", "Revenue grew in every region.", "Costs stayed flat."]
        )
    return write_tree(root, files)


def mixed_config(folder: Path) -> dict[str, Any]:
    return {
        "connect": {
            "sources": [
                {
                    "type": "folder",
                    "path": str(folder),
                    "glob": "**/*",
                    "records": {"id_field": "id", "text_fields": ["title", "text"]},
                }
            ]
        },
        "extract": {"ocr_dpi": 150},
        "normalize": {"chunk_strategy": "by_heading"},
        "index": {"embedding_model": "hash", "batch_size": 2},
    }


def local_run(config: Path, runs: Path, base: str | None = None) -> Path:
    out = api.pipeline_run(config, runs_dir=runs, base=base)
    assert out.status == "completed", out
    return runs / out.run_id


def recorded(path: Path) -> list[str]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


@pytest.mark.ocr
def test_a_ray_run_gives_the_artifacts_of_a_local_run_byte_for_byte(cluster: RayCluster, tmp_path: Path):
    folder = mixed_tree(tmp_path / "docs")
    config = write_config(tmp_path / "config.yaml", mixed_config(folder))
    local = local_run(config, tmp_path / "local")
    ray_runs = tmp_path / "ray"
    ray_args = ["--executor", "ray", "--ray-address", cluster.address, "--json"]
    done = cluster.run([*CLI, "pipeline", "run", str(config), "--runs-dir", str(ray_runs), *ray_args])
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout)
    remote = ray_runs / out["run_id"]
    assert content_files(remote) == content_files(local)
    assert store_contents(remote) == store_contents(local)
    manifest = json.loads((remote / "manifest.json").read_text())
    extract = manifest["phases"]["extract"]["details"]["executor"]
    assert extract["engine"] == "ray" and extract["nodes"] == 2
    assert sum(extract["items_by_worker"].values()) == 6  # one task per raw file
    assert manifest["phases"]["extract"]["stats"]["pdf_pages"] == 1
    assert extract["items_by_kind"] == {"document": 6} and extract["retries"] == 0
    index = manifest["phases"]["index"]
    # These workers have no GPU: every embedding actor ran on the CPU path; Chroma embedded is
    # written by the driver only.
    assert set(index["details"]["executor"]["devices"].values()) == {"cpu"}
    assert index["details"]["store_written_by"] == "driver"
    verify = subprocess.run(
        [*CLI, "index", "verify", "--run-id", out["run_id"], "--runs-dir", str(ray_runs), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": cluster.env["PYTHONPATH"]},
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_an_incremental_ray_run_equals_the_local_one_and_sends_workers_only_cache_misses(
    cluster: RayCluster, tmp_path: Path
):
    folder = mixed_tree(tmp_path / "docs", ocr=False)
    config = write_config(tmp_path / "config.yaml", mixed_config(folder))
    record = tmp_path / "embedded.jsonl"
    first = driver(cluster, str(config), str(tmp_path / "ray"), cluster.address, "--record", str(record))
    first_texts = recorded(record)
    assert first_texts and first["status"] == "completed"
    record.unlink()
    local_first = local_run(config, tmp_path / "local")

    (folder / "guide" / "theme.md").write_text("# Theme\n\nSet theme.name to pick another palette.\n")
    (folder / "site" / "page.html").unlink()
    second = driver(
        cluster, str(config), str(tmp_path / "ray"), cluster.address, "--base", "latest", "--record", str(record)
    )
    local_second = local_run(config, tmp_path / "local", base=local_first.name)
    remote = tmp_path / "ray" / second["run_id"]
    assert content_files(remote) == content_files(local_second)
    # Only the edited document's new chunk went to a worker: everything else came from the cache.
    sent = recorded(record)
    lines = (remote / "normalized" / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    chunks = [DocumentChunk.model_validate_json(line) for line in lines]
    new_texts = [c.embedding_text() for c in chunks if c.source.uri.endswith("guide/theme.md")]
    assert new_texts and sorted(sent) == sorted(new_texts)
    assert not set(sent) & set(first_texts)
    manifest = json.loads((remote / "manifest.json").read_text())
    assert manifest["phases"]["index"]["stats"]["texts_embedded"] == len(sent)


def _run_killing(cluster: RayCluster, args: list[str], find_victim: Any) -> tuple[dict[str, Any], int]:
    """Start the driver, SIGKILL the worker ``find_victim()`` names once it exists, finish the run."""
    process = cluster.popen([sys.executable, "-m", "tests.integration.ray_driver", *args], cwd=Path.cwd())

    def seen() -> int | None:
        assert process.poll() is None, "no worker to kill was seen"  # the run ended first
        found: int | None = find_victim()
        return found

    victim = wait_for(seen, timeout=300)
    assert victim is not None, "no worker to kill was seen"
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-4000:]
    return json.loads(stdout.strip().splitlines()[-1]), victim


@pytest.mark.ocr
def test_a_worker_killed_during_extraction_is_retried_and_the_run_is_identical(cluster: RayCluster, tmp_path: Path):
    folder = mixed_tree(tmp_path / "docs")
    config = write_config(tmp_path / "config.yaml", mixed_config(folder))
    local = local_run(config, tmp_path / "local")
    runs = tmp_path / "ray"
    phase_at_kill: list[str] = []

    def busy_extracting() -> int | None:
        busy = cluster.busy_workers("indexfoundry-document")
        manifests = list(runs.glob("*/manifest.json"))
        if not busy or not manifests:
            return None
        phase_at_kill.append(str(json.loads(manifests[0].read_text()).get("current_phase")))
        return busy[0] if phase_at_kill[-1] == "extract" else None

    out, _ = _run_killing(cluster, [str(config), str(runs), cluster.address], busy_extracting)
    assert phase_at_kill[-1] == "extract"
    assert out["status"] == "completed"
    assert content_files(runs / out["run_id"]) == content_files(local)
    executor = json.loads((runs / out["run_id"] / "manifest.json").read_text())["phases"]["extract"]["details"]
    assert executor["executor"]["retries_by_kind"] == {"document": 1}


def test_a_worker_killed_during_embedding_is_retried_and_the_run_is_identical(cluster: RayCluster, tmp_path: Path):
    folder = mixed_tree(tmp_path / "docs", ocr=False)
    config = write_config(tmp_path / "config.yaml", mixed_config(folder))
    local = local_run(config, tmp_path / "local")
    runs, marker = tmp_path / "ray", tmp_path / "stalled.pid"

    def stalled_actor() -> int | None:
        text = marker.read_text() if marker.exists() else ""
        return int(text) if text.strip() else None

    args = [str(config), str(runs), cluster.address, "--record", str(tmp_path / "rec"), "--stall-marker", str(marker)]
    out, victim = _run_killing(cluster, args, stalled_actor)
    assert out["status"] == "completed"
    assert content_files(runs / out["run_id"]) == content_files(local)
    assert victim not in cluster.marked_pids()
    index = json.loads((runs / out["run_id"] / "manifest.json").read_text())["phases"]["index"]["details"]
    # The stalled batch and the one queued behind it on the same actor were sent again.
    assert index["executor"]["retries_by_kind"]["embed"] >= 1
    assert index["executor"]["retries"] == index["executor"]["retries_by_kind"]["embed"]


def test_a_server_store_is_upserted_by_the_workers_without_duplicates_and_verifies(
    cluster: RayCluster, tmp_path: Path, pg_dsn: str
):
    folder = mixed_tree(tmp_path / "docs", ocr=False)
    config_data = mixed_config(folder)
    # PostgreSQL listens on a Unix socket only: the namespace's workers reach it through the file.
    config_data["index"]["vector_db"] = {"provider": "pgvector", "connection": {"dsn": pg_dsn}, "batch_size": 3}
    config = write_config(tmp_path / "config.yaml", config_data)
    ray_runs = tmp_path / "ray"
    out = driver(cluster, str(config), str(ray_runs), cluster.address)
    remote = ray_runs / out["run_id"]
    index = json.loads((remote / "manifest.json").read_text())["phases"]["index"]
    chunks = index["stats"]["vectors"]
    assert index["details"]["store_written_by"] == "workers"
    assert index["details"]["executor"]["items_by_kind"]["store"] == -(-chunks // 3)
    assert index["stats"]["store_writes"] == chunks
    import psycopg

    with psycopg.connect(pg_dsn) as conn:
        tables = conn.execute("SELECT table_name FROM indexfoundry_tables WHERE run_id = %s", (out["run_id"],))
        (table,) = (row[0] for row in tables.fetchall())
        rows, distinct = conn.execute(f'SELECT count(*), count(DISTINCT id) FROM "{table}"').fetchone()
    assert rows == distinct == chunks
    verify = subprocess.run(
        [*CLI, "index", "verify", "--run-id", out["run_id"], "--runs-dir", str(ray_runs), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": cluster.env["PYTHONPATH"]},
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # The driver still decided every artifact: a local run of the same config writes the same bytes.
    assert content_files(remote) == content_files(local_run(config, tmp_path / "local"))


def test_a_run_whose_driver_was_killed_resumes_with_run_id_to_the_artifacts_of_an_uninterrupted_run(
    cluster: RayCluster, tmp_path: Path
):
    folder = mixed_tree(tmp_path / "docs", ocr=False)
    config = write_config(tmp_path / "config.yaml", mixed_config(folder))
    local = local_run(config, tmp_path / "local")
    runs, marker = tmp_path / "ray", tmp_path / "stalled.pid"
    args = [str(config), str(runs), cluster.address, "--record", str(tmp_path / "rec"), "--stall-marker", str(marker)]
    process = cluster.popen([sys.executable, "-m", "tests.integration.ray_driver", *args], start_new_session=True)
    started = wait_for(
        lambda: (marker.exists() and marker.read_text().strip()) or process.poll() is not None, timeout=300
    )
    assert started, "the first embedding batch never started"
    # The driver dies while a batch is on a worker: extract and normalize are committed, index is not.
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    (run_dir,) = (path.parent for path in runs.glob("*/manifest.json"))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["phases"]["normalize"]["status"] == "completed"
    assert manifest["phases"].get("index", {}).get("status") != "completed"
    resume = ["pipeline", "run", str(config), "--runs-dir", str(runs), "--run-id", run_dir.name, "--json"]
    done = cluster.run([*CLI, *resume, "--executor", "ray", "--ray-address", cluster.address])
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout)
    assert out["run_id"] == run_dir.name and out["status"] == "completed"
    assert content_files(run_dir) == content_files(local)
    # Resumed, not redone: what the dead driver had committed is kept.
    assert out["phases"]["extract"]["status"] == out["phases"]["normalize"]["status"] == "skipped"
