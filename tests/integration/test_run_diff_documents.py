"""``indexfoundry run diff`` in every form leads with the documents added, removed and modified,
by source path, not with the content-hashed files behind them (real CLI processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import folder_config, write_config, write_tree


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args], capture_output=True, text=True, timeout=300, check=False
    )


def _run(config: Path, runs: Path, *extra: str) -> str:
    done = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--json", *extra)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["run_id"])


def test_every_form_of_run_diff_leads_with_the_changed_documents_by_source_path(tmp_path: Path):
    text = "\n\nA paragraph with enough words in it to be a chunk of its own in the index.\n"
    docs = write_tree(tmp_path / "docs", {name: f"# {name}{text}" for name in ("a.md", "b.md", "c.md")})
    config = write_config(tmp_path / "docs.yaml", folder_config(docs, max_shrink=1))
    runs = tmp_path / "runs"
    old = _run(config, runs)
    (docs / "a.md").write_text("# a.md\n\nThe first page now says something else entirely, at length.\n")
    (docs / "b.md").unlink()
    (docs / "d.md").write_text(f"# d.md{text}")
    new = _run(config, runs, "--base", "latest")

    plain = cli("run", "diff", old, new, "--runs-dir", str(runs))
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[1:5] == [
        "documents: 1 added, 1 removed, 1 modified, 1 unchanged",
        "  + docs/d.md",
        "  - docs/b.md",
        "  ~ docs/a.md",
    ]
    assert "raw/" not in plain.stdout.replace("raw/raw_manifest.jsonl", "")  # no content-hashed file is listed
    # a.md's new bytes and d.md are 2 new content-hashed files; a.md's old bytes and b.md, 2 gone
    assert "  per-document files (named by content hash): 2 added, 2 removed" in plain.stdout

    as_json = json.loads(cli("run", "diff", old, new, "--runs-dir", str(runs), "--format", "json").stdout)
    assert list(as_json)[:4] == ["run_id_a", "run_id_b", "identical", "document_changes"]
    assert as_json["document_changes"] == {
        "added": ["docs/d.md"],
        "removed": ["docs/b.md"],
        "modified": ["docs/a.md"],
        "unchanged": 1,
    }

    markdown = cli("run", "diff", old, new, "--runs-dir", str(runs), "--format", "markdown").stdout
    assert markdown.index("**Documents:** 1 added, 1 removed, 1 modified, 1 unchanged") < markdown.index("| phase |")
    assert "- added `docs/d.md`\n- removed `docs/b.md`\n- modified `docs/a.md`" in markdown

    same = cli("run", "diff", new, new, "--runs-dir", str(runs))
    assert same.stdout.splitlines()[1] == "identical (timing fields ignored)"
